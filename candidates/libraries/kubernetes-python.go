package libraries

import (
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// kubernetes-python: the Kubernetes Python client 22.6.0 (Debian) leaderelection with its
// only lock, ConfigMapLock (libraries/kubernetes-python/k8s_candidate.py).
var kubernetesPythonLeaderElection = Recipe{
	Name: "kubernetes-python-leaderelection", Store: storekinds.Kubernetes, Folder: "kubernetes-python",
	Summary: "Kubernetes Python client 22.6.0 LeaderElection(Config(ConfigMapLock, lease, renew deadline, retry, onstarted_leading, " +
		"onstopped_leading)).run() as its example shows; onstarted_leading writes until onstopped_leading is called",
	Variant: AsShipped,
	Token: "none from the library (ConfigMapLock keeps no resourceVersion of its own write, the record has no leaderTransitions): " +
		"the label is the host CLOCK_MONOTONIC in microseconds when onstarted_leading ran, which grows with every election " +
		"and which clock faults do not move",
	Fenced: false,
	Timing: kubernetesPythonTiming,
	Upstream: []string{
		"https://github.com/kubernetes-client/python/blob/v22.6.0/kubernetes/base/leaderelection/example.py",
		"https://github.com/kubernetes-client/python/issues/2075",
		"https://github.com/kubernetes-client/python/issues/1914",
		"https://github.com/kubernetes-client/python/pull/2670",
	},
}

// kubernetesPythonDurations mirrors k8s_candidate.py: the client-go scaling of
// docs/candidates.md section 8 within what electionconfig.Config accepts (retry_period >= 1 s,
// renew_deadline > 1.2 x retry_period, lease_duration > renew_deadline).
func kubernetesPythonDurations(ttl time.Duration) (lease, renew, retry time.Duration) {
	retry = max(time.Second, ttl*2/15)
	renew = max(ttl*2/3, retry*5/4)
	lease = max(ttl, renew*3/2)
	return lease, renew, retry
}

// kubernetesPythonTiming: there is no release, so a handoff waits for the lease like a
// crash does. A follower times the lease from when it saw the last renewal (up to one retry
// period after it was written) on its own wall clock and tries every retry period. Measured
// at TTL 2 s: handoffs 1.97-2.66 s, crash failovers 1.99-2.46 s.
func kubernetesPythonTiming(c contract.Config) runtime.Timing {
	lease, _, retry := kubernetesPythonDurations(c.LeaseTTL)
	bound := lease + 2*retry + time.Second
	return runtime.Timing{TTL: lease, Renew: retry, Retry: retry, HandoffBound: bound, FailoverBound: bound}
}
