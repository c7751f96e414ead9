//go:build core

package candidates

import "github.com/splitbrain-chaos/splitbrain/candidates/runtime"

// The core build (-tags core) leaves out the recipes whose clients are heavy (client-go, the
// AWS SDK, Consul's API): their registry entries are nil and dropped from Registry, and a row
// on their stores is run by the full binary (suite: delegated rows).
var dynamoLease, k8sLease, k8sSidecar, leaderForLife, consulLock runtime.Definition
