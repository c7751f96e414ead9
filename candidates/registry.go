// Package candidates holds the election recipes, one file each. A recipe file holds only
// election logic; candidates/runtime implements the candidate contract around it.
package candidates

import (
	"slices"

	"github.com/splitbrain-chaos/splitbrain/candidates/libraries"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
)

// Registry is the project's one list of recipes: adding a recipe is its file plus one line
// here (docs/candidates.md, "Adding a recipe"). The harness, the candidate command, the
// matrix loader and the recipe chaos tests all read this list. The election libraries run as
// shipped (libraries.Registry) follow the Go recipes. The core build leaves out the recipes
// on stores whose clients are heavy (unlinked_core.go): their entries are nil here.
var Registry = linked(append(runtime.Registry{
	etcdElection,
	zookeeperSeq,
	postgresAdvisory,
	redisSetNX,
	redisSplitIncr,
	dynamoLease,
	redisIncrAfterSetNX,
	redlock,
	k8sLease,
	k8sSidecar,
	leaderForLife,
	naiveLease,
	consulLock,
	raftElection,
	bullyElection,
	ringElection,
	etcdStonith,
	etcdStonithProceed,
	etcdStonithReadback,
}, libraries.Definitions()...))

func linked(r runtime.Registry) runtime.Registry {
	return slices.DeleteFunc(r, func(d runtime.Definition) bool { return d == nil })
}
