package candidates

// redis-incr-after-setnx (negative control): the first version of redis-split-incr. SET NX
// PX takes the lock, a second command (INCR) draws the fencing token, and the lease is
// counted from when that acquire finished. A pause longer than the TTL between the two
// commands lets the lock expire and another candidate take it and draw a lower token; the
// resumed candidate then draws a higher one and leads as a zombie whose token outranks the
// rightful holder's. Waiters poll at a fixed period. Leader-targeted faults never land
// between the two commands (the candidate is not a leader yet); a fault triggered on the
// step it emits there (on=step:lock-acquired) does (docs/faults.md, "Triggers").

import (
	"context"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var redisIncrAfterSetNX = runtime.Spec{
	Name: "redis-incr-after-setnx", Store: storekinds.Redis, ClockAware: true, Negative: true,
	Summary: "NEGATIVE CONTROL: SET NX PX, then INCR as a second command; lease counted from the end of the acquire",
	Steps:   []string{"lock-acquired", "token-drawn"},
	Timing:  redisTiming,
	New: func(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
		r, err := newRedisLease(env, acquireIncrAfter)
		if err != nil {
			return nil, err
		}
		r.incrGap = incrAfterGap(env)
		return r, nil
	},
}

// incrAfterGap is the time between the two commands, TTL/4: the candidate loads its state
// after it got the lock and before it draws its token. Without it the window is one Redis
// round trip (well under a millisecond), far shorter than the time a triggered fault needs
// to land after the step is printed (docs/performance.md, "Triggered faults"), so no fault
// could hit it.
func incrAfterGap(env runtime.Env) time.Duration { return env.Timing.TTL / 4 }
