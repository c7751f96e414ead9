package libraries

import (
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// python-etcd3: python-etcd3 0.12.0 (Debian) Lock used as a leader election
// (libraries/python-etcd3/etcd3_candidate.py).
var (
	pythonEtcd3Lock = Recipe{
		Name: "python-etcd3-lock", Store: storekinds.Etcd, Folder: "python-etcd3",
		Args: []string{"shipped"},
		Summary: "python-etcd3 0.12.0 client.lock(name, ttl=TTL).acquire() as the README shows, then work while holding it: " +
			"nothing renews the lease and nothing tells the holder it expired",
		Variant:  AsShipped,
		Token:    pythonEtcd3Token,
		Fenced:   false,
		Timing:   pythonEtcd3Timing,
		Upstream: pythonEtcd3Upstream,
	}
	pythonEtcd3LockRefresh = Recipe{
		Name: "python-etcd3-lock-refresh", Store: storekinds.Etcd, Folder: "python-etcd3",
		Args: []string{"refresh"},
		Summary: "python-etcd3 0.12.0 Lock plus lock.refresh() every renew interval (TTL/3) and lock.is_acquired() before every write; " +
			"the term ends when is_acquired() does not answer True",
		Variant: AsRecommended,
		Advice: "the Lock docstring (etcd3/locks.py): \"The lock will be released after this time elapses, unless refreshed\", " +
			"and its example calls lock.is_acquired() and lock.refresh() inside the critical section; the adapter refreshes " +
			"every renew interval and checks is_acquired() before each write (an exception from it ends the term too)",
		Token:    pythonEtcd3Token,
		Fenced:   false,
		Timing:   pythonEtcd3Timing,
		Upstream: pythonEtcd3Upstream,
	}
)

const pythonEtcd3Token = "none from the library (Lock keeps no revision: \"# TODO: save the created revision\"; " +
	"acquire() drops the transaction's answer): the label is the host CLOCK_MONOTONIC in microseconds when acquire() " +
	"returned True, which grows with every acquisition and which clock faults do not move"

var pythonEtcd3Upstream = []string{
	"https://python-etcd3.readthedocs.io/en/latest/usage.html#locks",
	"https://github.com/kragniz/python-etcd3/blob/v0.12.0/etcd3/locks.py",
	"https://github.com/kragniz/python-etcd3/issues/109",
	"https://github.com/kragniz/python-etcd3/issues/2149",
}

// pythonEtcd3Timing: the lease is whole seconds, at least 2 s (the server's minimum here).
// With Debian's tenacity 8.2 a contended acquire() raises TypeError at once
// (kragniz/python-etcd3#2149) instead of watching the key, so waiters poll every retry
// interval. SIGTERM: release() deletes the key, a waiter's next poll takes it. SIGKILL: the
// lease expires TTL after the last refresh (the lessor revokes in 500 ms rounds), then a poll.
// Renew is the recommended variant's refresh period; the shipped variant never renews.
func pythonEtcd3Timing(c contract.Config) runtime.Timing {
	ttl := wholeSeconds(c.LeaseTTL, 2)
	retry := c.RetryInterval
	if retry == 0 {
		retry = 50 * time.Millisecond
	}
	renew := c.RenewInterval
	if renew == 0 {
		renew = c.LeaseTTL / 3
	}
	return runtime.Timing{TTL: ttl, Renew: renew, Retry: retry,
		HandoffBound: retry + time.Second, FailoverBound: ttl + retry + time.Second}
}
