package libraries

import (
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// etcdctl: `etcdctl lock` from Debian's etcd-client 3.4.23 (libraries/etcdctl), both forms
// its README shows. Neither form is "as recommended": etcdctl's docs recommend nothing
// beyond the lock itself; etcd's own advice (fence with the revision, learning/why.md
// "Notes on the usage of lock and lease") is what both rows get on the fenced resource.
var (
	etcdctlLock = Recipe{
		Name: "etcdctl-lock", Store: storekinds.Etcd, Folder: "etcdctl",
		Args: []string{"exec"},
		Summary: "etcdctl lock --ttl=N NAME -- leader.sh in a loop (the cron-singleton pattern): the command " +
			"leads with ETCD_LOCK_REV and is never told or stopped when the session expires",
		Variant: AsShipped,
		Token: "ETCD_LOCK_REV, which etcdctl passes to the command: the header revision of the read that granted " +
			"the lock, not the key's create revision (two holders under etcd#11429 get the same one)",
		Fenced: true,
		Timing: func(c contract.Config) runtime.Timing {
			ttl := etcdctlTTL(c.LeaseTTL)
			// Waiters block in Mutex.Lock on a watch of the key before theirs. A SIGTERM ends the
			// command, then etcdctl deletes its key; a crash leaves the key until its lease
			// expires on the server (TTL + the lessor's 500 ms revoke loop), then the watch.
			return runtime.Timing{TTL: ttl, Renew: ttl / 3,
				HandoffBound: time.Second, FailoverBound: ttl + 2*time.Second}
		},
		Upstream: etcdctlUpstream,
	}
	etcdctlLockHold = Recipe{
		Name: "etcdctl-lock-hold", Store: storekinds.Etcd, Folder: "etcdctl",
		Args: []string{"hold"},
		Summary: "etcdctl lock --ttl=N NAME without a command: lead while that etcdctl runs (it exits " +
			"'session expired' on lease loss), checked before every write",
		Variant: AsShipped,
		Token:   "CreateRevision of the lock key, from the GET etcdctl prints on acquiring (-w fields)",
		Fenced:  true,
		Timing: func(c contract.Config) runtime.Timing {
			ttl := etcdctlTTL(c.LeaseTTL)
			retry := c.RetryInterval
			if retry == 0 {
				retry = 50 * time.Millisecond // the shell helper's default poll of etcdctl's output
			}
			return runtime.Timing{TTL: ttl, Renew: ttl / 3, Retry: retry,
				HandoffBound: retry + time.Second, FailoverBound: ttl + retry + 2*time.Second}
		},
		Upstream: etcdctlUpstream,
	}
	etcdctlUpstream = []string{
		"https://github.com/etcd-io/etcd/blob/v3.4.23/etcdctl/ctlv3/command/lock_command.go",
		"https://github.com/etcd-io/etcd/blob/v3.4.23/etcdctl/README.md#lock-options-lockname-command-arg1-arg2-",
		"https://github.com/etcd-io/etcd/pull/11408",
		"https://github.com/etcd-io/etcd/issues/11429",
		"https://github.com/etcd-io/etcd/issues/10811",
		"https://etcd.io/docs/v3.5/learning/why/#notes-on-the-usage-of-lock-and-lease",
	}
)

// etcdctlTTL: --ttl takes whole seconds, and the project's etcd grants no lease below 2 s.
func etcdctlTTL(d time.Duration) time.Duration { return wholeSeconds(d, 2) }
