package libraries

import (
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// node-etcd3: Microsoft's etcd3 1.1.2 (npm) on the etcd store (libraries/node-etcd3/etcd3.js).
var (
	nodeEtcd3Election = Recipe{
		Name: "node-etcd3-election", Store: storekinds.Etcd, Folder: "node-etcd3",
		Args: []string{"election"},
		Summary: "etcd3 1.1.2 client.election(name, ttl).campaign(id) as its documented example: work on 'elected', " +
			"stop on 'error' and campaign again after 5 s",
		Variant: AsShipped,
		Token:   "create revision of the campaign's key (Campaign.keyRevision, set from the creating transaction)",
		Fenced:  true,
		Timing: func(c contract.Config) runtime.Timing {
			ttl := etcd3TTL(c.LeaseTTL)
			retry := c.RetryInterval
			if retry == 0 {
				retry = 5 * time.Second // the documented example's setTimeout(runCampaign, 5000)
			}
			// Watch-based: a resign (lease revoke) deletes the key and the next waiter's
			// watch fires. A crash: the lease expires on the server (TTL + the lessor's
			// 500 ms revoke loop), then the watch.
			return runtime.Timing{TTL: ttl, Renew: ttl / 3, Retry: retry,
				HandoffBound: time.Second, FailoverBound: ttl + 2*time.Second}
		},
		Upstream: []string{
			"https://microsoft.github.io/etcd3/classes/election.html",
			"https://github.com/microsoft/etcd3/issues/176",
			"https://github.com/microsoft/etcd3/issues/158",
		},
	}
	nodeEtcd3Lock = Recipe{
		Name: "node-etcd3-lock", Store: storekinds.Etcd, Folder: "node-etcd3",
		Args: []string{"lock"},
		Summary: "etcd3 1.1.2 client.lock(name).ttl(ttl).do(fn) as the Lock docs show: fn is the leader's work; " +
			"a held lock (EtcdLockFailedError) is retried every retry interval",
		Variant: AsShipped,
		Token:   "create revision of the lock key, read with one get after acquire() (Lock keeps none)",
		Fenced:  true,
		Timing: func(c contract.Config) runtime.Timing {
			ttl := etcd3TTL(c.LeaseTTL)
			retry := c.RetryInterval
			if retry == 0 {
				retry = 50 * time.Millisecond
			}
			return runtime.Timing{TTL: ttl, Renew: ttl / 3, Retry: retry,
				HandoffBound: retry + time.Second, FailoverBound: ttl + retry + 2*time.Second}
		},
		Upstream: []string{
			"https://microsoft.github.io/etcd3/classes/lock.html",
		},
	}
)

// etcd3TTL: the library grants whole-second leases (and refuses less than 1 s).
func etcd3TTL(d time.Duration) time.Duration { return wholeSeconds(d, 1) }
