package libraries

import (
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// redis-py: redis-py 4.3.4 (Debian) Lock (libraries/redis-py/redis_py_lock.py), on one
// redis.Redis with socket_timeout and socket_connect_timeout TTL/3 (unset by default: wait
// for ever), the lock's timeout the TTL.
var (
	redisPyLock = Recipe{
		Name: "redis-py-lock", Store: storekinds.Redis, Folder: "redis-py",
		Args:    []string{"shipped"},
		Summary: "redis-py 4.3.4 r.lock(name, timeout=TTL): acquire, a job of TTL/4 worth of writes (TTL/4 / write interval), release; no renewal, nothing tells the holder its key expired",
		Variant: AsShipped,
		Token:   redisPyToken,
		Fenced:  false,
		Timing:  redisPyTiming,
		Upstream: []string{
			"https://github.com/redis/redis-py/blob/v4.3.4/redis/lock.py",
			"https://github.com/redis/redis-py/blob/v4.3.4/redis/client.py#L1099",
			"https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
		},
	}
	redisPyLockExtend = Recipe{
		Name: "redis-py-lock-extend", Store: storekinds.Redis, Folder: "redis-py",
		Args:    []string{"extend"},
		Summary: "redis-py 4.3.4 Lock held for the whole tenure: extend(TTL, replace_ttl=True) every renew interval (TTL/3), owned() before every write",
		Variant: AsRecommended,
		Advice: "redis-py's Lock API: extend(additional_time, replace_ttl=True) resets the TTL of a held lock, the active/passive use it was added for " +
			"(redis-py#1014, #629; CHANGES 3.5.0), and owned() \"Returns True if this key is locked by this lock\". " +
			"The adapter extends every renew interval, checks owned() before every write, and steps down when either returns False or raises",
		Token:  redisPyToken,
		Fenced: false,
		Timing: redisPyTiming,
		Upstream: []string{
			"https://github.com/redis/redis-py/blob/v4.3.4/redis/lock.py",
			"https://github.com/redis/redis-py/pull/1014",
			"https://github.com/redis/redis-py/issues/629",
			"https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
		},
	}
)

const redisPyToken = "none from the library (the Lock's value is a random uuid1): the label is INCR of <lock key>:label right after each acquire, " +
	"which grows with every acquisition but is a second command, so it orders the INCRs, not the grants"

// redisPyTiming: waiters poll acquire(blocking=False) every retry interval. SIGTERM: the
// leader releases (DEL), then a waiter's next poll. SIGKILL: the key expires TTL after the
// holder's last SET or extend (server clock), then a waiter's next poll.
func redisPyTiming(c contract.Config) runtime.Timing {
	retry := c.RetryInterval
	if retry == 0 {
		retry = 50 * time.Millisecond
	}
	renew := c.RenewInterval
	if renew == 0 {
		renew = c.LeaseTTL / 3
	}
	return runtime.Timing{TTL: c.LeaseTTL, Renew: renew, Retry: retry,
		HandoffBound: retry + 500*time.Millisecond, FailoverBound: c.LeaseTTL + retry + 500*time.Millisecond}
}
