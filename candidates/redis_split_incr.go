package candidates

// redis-split-incr (negative control): redis-setnx with the fencing INCR sent as a separate
// command after SET NX. A holder delayed between the two commands draws its token after a
// later holder drew its own, so tokens can contradict the order of acquisition; the token
// checker must flag it.

import (
	"context"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
)

var redisSplitIncr = runtime.Spec{
	Name: "redis-split-incr", Store: contract.StoreRedis, ClockAware: true, Negative: true,
	Summary: "NEGATIVE CONTROL: SET NX PX, then INCR as a separate command",
	Timing:  redisTiming,
	New: func(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
		return newRedisLease(env, true)
	},
}
