// Command interval-waiter is a correct lock client that measures intervals on its monotonic
// clock, the way client-go's leader election or a ZooKeeper-free lease library does: a waiter
// takes over when the lease record has not changed for a lease duration measured on its
// monotonic clock since it first saw that record; the holder changes the record on every
// renewal and stops leading when its own lease, counted on its monotonic clock from the
// renewal's send, runs out. It honours the clock file (docs/candidates.md §5) through the Go
// runtime's Clock, so candidate clock faults move exactly those intervals.
//
// Tolerance: the holder and the waiters may run at different rates within a factor of 2. A
// waiter needs the record unchanged for TTL on its clock, at least TTL/2 real time after the
// renewal was written at 2x; the holder renews every TTL/8 on a real timer and leads for TTL/2
// of its clock after a renewal's send, at most TTL real time at 0.5x. When both run at the
// same rate (the rows' faults hit every candidate at once) a holder is out before any waiter
// takes over.
//
// It exists for the matrix rows redis/interval-waiter/clock-{slow,fast}-all: rate faults on
// every candidate must leave it valid, heals included (a monotonic line that jumped forward
// at the heal made such a waiter take a live lease).
//
// Build: CGO_ENABLED=0 go build -o interval-waiter ./testdata/interval-waiter
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// casTake sets the record to ARGV[2] only if it still holds ARGV[1] ("" = absent), and draws
// the fencing token in the same script: two waiters that saw the same record cannot both win.
const casTake = `
local cur = redis.call('GET', KEYS[1])
if (cur == false and ARGV[1] == '') or cur == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  return redis.call('INCR', KEYS[2])
end
return 0`

// casSet replaces the record only if it still holds ARGV[1] (renewal, release with ARGV[2] "").
const casSet = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2]) end
  return 1
end
return 0`

var spec = runtime.Spec{
	Name:       "interval-waiter",
	Store:      contract.StoreRedis,
	Summary:    "takes over a record unchanged for a lease duration on its monotonic clock (test candidate)",
	ClockAware: true,
	Timing: func(c contract.Config) runtime.Timing {
		return runtime.Timing{TTL: c.LeaseTTL, Renew: c.LeaseTTL / 8, Retry: 50 * time.Millisecond,
			HandoffBound: time.Second, FailoverBound: 2*c.LeaseTTL + time.Second}
	},
	New: func(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
		if len(env.Endpoints) != 1 {
			return nil, fmt.Errorf("want one redis endpoint, got %v", env.Endpoints)
		}
		t := env.Timing.Renew
		rdb := redis.NewClient(&redis.Options{Addr: env.Endpoints[0], MaxRetries: -1,
			DialTimeout: t, ReadTimeout: t, WriteTimeout: t, PoolSize: 4, DisableIdentity: true})
		return &waiter{env: env, rdb: rdb,
			key: "splitbrain:interval:" + env.ElectionName, fence: "splitbrain:interval-fence:" + env.ElectionName}, nil
	},
}

type waiter struct {
	env        runtime.Env
	rdb        *redis.Client
	key, fence string
	value      string // the record as this holder last wrote it, "" when not holding
	renewals   int
	stop       func()
}

// leadFor is how long after a renewal's send the holder may lead, on its monotonic clock.
func (w *waiter) leadFor() time.Duration { return w.env.Timing.TTL / 2 }

func (w *waiter) Campaign(ctx context.Context) (runtime.Term, error) {
	var seen string
	var seenAt runtime.Instant
	haveSeen := false
	for {
		cur, err := w.rdb.Get(ctx, w.key).Result()
		if errors.Is(err, redis.Nil) {
			cur, err = "", nil
		}
		if err == nil {
			now := w.env.Clock.Mono()
			if cur != seen || !haveSeen {
				seen, seenAt, haveSeen = cur, now, true
			}
			if cur == "" || now.Sub(seenAt) >= w.env.Timing.TTL {
				value := w.env.NodeID + "/" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/0"
				sent, callT := w.env.Clock.Mono(), history.Now()
				token, err := w.rdb.Eval(ctx, casTake, []string{w.key, w.fence}, cur, value).Int64()
				if err == nil && token > 0 {
					w.value, w.renewals = value, 0
					return w.lead(sent, token, callT), nil
				}
			}
		} else if ctx.Err() == nil {
			w.env.Logf("get: %v", err)
		}
		select {
		case <-ctx.Done():
			return runtime.Term{}, ctx.Err()
		case <-time.After(w.env.Timing.Retry):
		}
	}
}

func (w *waiter) lead(sent runtime.Instant, token, callT int64) runtime.Term {
	deadline := make(chan runtime.Instant, 1)
	deadline <- sent.Add(w.leadFor())
	setDeadline := func(t runtime.Instant) { <-deadline; deadline <- t }
	lost, stop := runtime.Monitor(w.env.Timing.Renew, func(ctx context.Context) error {
		w.renewals++
		next := w.value[:len(w.value)-len(lastField(w.value))] + strconv.Itoa(w.renewals)
		sentAt := w.env.Clock.Mono()
		ok, err := w.rdb.Eval(ctx, casSet, []string{w.key}, w.value, next).Int64()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return nil // try again next period; the deadline ends the term if it keeps failing
		case ok == 0:
			return errors.New("record changed by another candidate")
		}
		w.value = next
		setDeadline(sentAt.Add(w.leadFor()))
		return nil
	})
	w.stop = stop
	valid := func() error {
		end := <-deadline
		deadline <- end
		if now := w.env.Clock.Mono(); !now.Before(end) {
			return fmt.Errorf("lease ran out on the monotonic clock %v ago", now.Sub(end).Round(time.Millisecond))
		}
		return nil
	}
	return runtime.Term{Token: token, Lost: lost, Valid: valid, CallT: callT}
}

func lastField(v string) string {
	for i := len(v) - 1; i >= 0; i-- {
		if v[i] == '/' {
			return v[i+1:]
		}
	}
	return v
}

func (w *waiter) Resign(ctx context.Context) error {
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
	if w.value == "" {
		return nil
	}
	_, err := w.rdb.Eval(ctx, casSet, []string{w.key}, w.value, "").Result()
	w.value = ""
	return err
}

func (w *waiter) Close() error { return w.rdb.Close() }

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if err := runtime.Run(ctx, runtime.Options{Recipes: runtime.Registry{spec}, Recipe: spec.Name}); err != nil {
		fmt.Fprintln(os.Stderr, "interval-waiter:", err)
		var ce *runtime.ConfigError
		if errors.As(err, &ce) {
			os.Exit(64)
		}
		os.Exit(1)
	}
}
