package candidates

// redis-split-incr (negative control): redis-setnx with the fencing INCR split from the
// lock: each campaign draws its token with INCR when it starts, then polls SET NX. Waiting
// candidates hold older tickets than a leader that rejoins the race, so whenever an older
// ticket wins after a newer one, tokens contradict the order of election; the token checker
// must flag it. (INCR right after SET NX, the first version, was only wrong when a pause
// landed in that one round trip, which no fault of the matrix reaches: see docs/candidates.md.)

import (
	"context"

	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var redisSplitIncr = runtime.Spec{
	Name: "redis-split-incr", Store: storekinds.Redis, ClockAware: true, Negative: true,
	Summary: "NEGATIVE CONTROL: INCR a ticket when the campaign starts, then poll SET NX PX; token = that ticket",
	Steps:   []string{"token-drawn", "lock-acquired"},
	Timing:  redisTiming,
	New: func(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
		return newRedisLease(env, acquireTicketLast)
	},
}
