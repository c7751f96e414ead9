package libraries

import (
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// tooz: OpenStack tooz 3.1.0 (Debian) leader election as its tutorial shows it, one adapter
// (libraries/tooz/tooz_candidate.py) for the two drivers whose stores the harness runs.
// There is no "as recommended" variant: tooz's docs recommend only the heartbeat, which
// the tutorial's start(start_heart=True) already runs, and offer no way to learn that
// leadership was lost (tooz has no such event).
var (
	toozZooKeeper = Recipe{
		Name: "tooz-zookeeper", Store: storekinds.ZooKeeper, Folder: "tooz",
		Summary:  "tooz 3.1.0 zookeeper:// (kazoo 2.8.0 Lock under the group) watch_elected_as_leader + run_watchers loop as the tutorial shows; leads from LeaderElected, no loss event exists",
		Variant:  AsShipped,
		Token:    toozToken,
		Fenced:   false,
		Timing:   toozZooKeeperTiming,
		Upstream: toozUpstream,
	}
	toozRedis = Recipe{
		Name: "tooz-redis", Store: storekinds.Redis, Folder: "tooz",
		Summary:  "tooz 3.1.0 redis:// (redis-py 4.3.4 Lock, renewed by the heart) watch_elected_as_leader + run_watchers loop as the tutorial shows; leads from LeaderElected, no loss event exists",
		Variant:  AsShipped,
		Token:    toozToken,
		Fenced:   false,
		Timing:   toozRedisTiming,
		Upstream: toozUpstream,
	}
)

const toozToken = "none from the library (tooz exposes neither the lock znode nor the Redis lock value): " +
	"the label is the host CLOCK_MONOTONIC in microseconds when LeaderElected arrived, which grows with every election " +
	"and which clock faults do not move"

var toozUpstream = []string{
	"https://docs.openstack.org/tooz/latest/user/tutorial/leader_election.html",
	"https://docs.openstack.org/tooz/latest/user/tutorial/coordinator.html",
	"https://opendev.org/openstack/tooz/src/tag/3.1.0/tooz/coordination.py",
	"https://opendev.org/openstack/tooz/src/tag/3.1.0/tooz/drivers/redis.py",
}

// toozTTL: tooz reads its "timeout" and "lock_timeout" options with int(), so the session
// or lock lasts the TTL rounded up to whole seconds.
func toozTTL(c contract.Config) time.Duration {
	return wholeSeconds(c.LeaseTTL, 1)
}

func toozRetry(c contract.Config) time.Duration {
	if c.RetryInterval > 0 {
		return c.RetryInterval
	}
	return 50 * time.Millisecond
}

// ZooKeeper: waiters call run_watchers every retry interval (a non-blocking kazoo Lock
// acquire). SIGTERM: coordinator.stop() closes the session, the lock znode goes at once.
// SIGKILL: the session expires after its timeout (the server checks in 0.5 s ticks).
func toozZooKeeperTiming(c contract.Config) runtime.Timing {
	ttl, retry := toozTTL(c), toozRetry(c)
	return runtime.Timing{TTL: ttl, Retry: retry,
		HandoffBound: retry + time.Second, FailoverBound: ttl + retry + 2*time.Second}
}

// Redis: the heart renews the lock every lock_timeout/2 (Heart waits half the time
// heartbeat() returns). SIGTERM: coordinator.stop() releases the lock. SIGKILL: the key
// expires lock_timeout after the last renewal, then a waiter's next run_watchers.
func toozRedisTiming(c contract.Config) runtime.Timing {
	ttl, retry := toozTTL(c), toozRetry(c)
	return runtime.Timing{TTL: ttl, Renew: ttl / 2, Retry: retry,
		HandoffBound: retry + time.Second, FailoverBound: ttl + retry + 500*time.Millisecond}
}
