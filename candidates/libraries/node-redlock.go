package libraries

import (
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// node-redlock: redlock 4.2.0 (npm latest) with one ioredis 5 client per Redis server of
// store redis-multi (libraries/node-redlock/redlock.js).
var (
	nodeRedlock = Recipe{
		Name: "node-redlock", Store: storekinds.RedisMulti, Folder: "node-redlock",
		Args:    []string{"shipped"},
		Summary: "node-redlock 4.2.0 lock(resource, ttl) as the README's main example: lock, a job of writes for the renew interval (TTL/3), unlock; no extend",
		Variant: AsShipped,
		Token:   redlockToken,
		Fenced:  false,
		Timing:  nodeRedlockTiming,
		Upstream: []string{
			"https://github.com/mike-marcacci/node-redlock/tree/v4.2.0#usage-promise-style",
			"https://github.com/mike-marcacci/node-redlock/pull/274",
			"https://github.com/mike-marcacci/node-redlock/issues/296",
			"https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
		},
	}
	nodeRedlockExtend = Recipe{
		Name: "node-redlock-extend", Store: storekinds.RedisMulti, Folder: "node-redlock",
		Args:    []string{"extend"},
		Summary: "node-redlock 4.2.0 lock(resource, ttl) + lock.extend(ttl) every renew interval (TTL/3); the leader stops at the first extend that rejects",
		Variant: AsRecommended,
		Advice: "README, \"Locking and Extending\": \"you can continue to extend the lock as long as you never let it expire\"; " +
			"the adapter extends every renew interval and ends the term when extend() rejects (LockError)",
		Token:  redlockToken,
		Fenced: false,
		Timing: nodeRedlockTiming,
		Upstream: []string{
			"https://github.com/mike-marcacci/node-redlock/tree/v4.2.0#locking-and-extending",
			"https://github.com/mike-marcacci/node-redlock/pull/274",
			"https://github.com/mike-marcacci/node-redlock/issues/283",
		},
	}
)

const redlockToken = "none from the store (Redlock has no fencing token): the label is the acquisition's lock.expiration, " +
	"the winning attempt's start on the candidate's wall clock (Date.now(), which clock faults move) + ttl - drift, Unix ms"

// nodeRedlockTiming: waiters call lock() in a loop, each call 11 attempts 200 ms ± 200 ms
// apart (the README's retryDelay and retryJitter), so a freed lock is tried within 400 ms.
// SIGTERM: unlock, then a waiter's next attempt. SIGKILL: the keys expire TTL after the
// holder's last SET (acquire or extend), then a waiter's next attempt.
func nodeRedlockTiming(c contract.Config) runtime.Timing {
	renew := c.RenewInterval
	if renew == 0 {
		renew = c.LeaseTTL / 3
	}
	const poll = 400 * time.Millisecond
	return runtime.Timing{TTL: c.LeaseTTL, Renew: renew, Retry: poll,
		HandoffBound:  poll + 500*time.Millisecond,
		FailoverBound: c.LeaseTTL + poll + 500*time.Millisecond}
}
