// Command redis-multi is an example candidate for --store redis-multi, written from
// docs/candidates.md section 8 ("redis-multi"): Redlock over the N independent Redis
// servers with redsync, one go-redis client per endpoint. Redlock has no fencing token;
// the token is the acquisition time in Unix ms, as Redlock's users stamp it.
//
//	CGO_ENABLED=0 go build -o /tmp/redlock-candidate ./examples/stores/redis-multi
//	splitbrain run --store redis-multi --candidate-cmd /tmp/redlock-candidate --nemesis pause-leader --time 30s
package main

import (
	"context"
	"os"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

func main() {
	env := candidate.Load("redis-multi")
	ctx, stop := candidate.Signals()
	defer stop()
	timeout := max(env.Renew, 100*time.Millisecond) // R16: well below the TTL
	var pools []redsyncredis.Pool
	for _, ep := range env.Endpoints { // N independent servers: one client each
		pools = append(pools, goredis.NewPool(redis.NewClient(&redis.Options{
			Addr: ep,
			// redsync bounds every attempt with a context deadline; without this go-redis
			// ignores it and a silent server holds each attempt for the read timeout.
			ContextTimeoutEnabled: true,
			DialTimeout:           timeout, ReadTimeout: timeout, WriteTimeout: timeout,
			MaxRetries: -1, // a resent SET NX whose answer was lost reads as "taken"
		})))
	}
	rs := redsync.New(pools...)
	w := candidate.NewWriter(env)
	for ctx.Err() == nil {
		candidate.Campaigning()
		m := rs.NewMutex("example-redlock:"+env.Election, redsync.WithExpiry(env.TTL))
		var token, callT int64
		for {
			// TryLock once per retry interval; LockContext would give up after 32 tries.
			sent := time.Now()
			callT = candidate.Monotonic()
			if err := m.TryLockContext(context.Background()); err == nil {
				token = sent.UnixMilli()
				break
			}
			if !candidate.Sleep(ctx, env.Retry) {
				break
			}
		}
		if token == 0 {
			break // SIGTERM while waiting
		}
		if ctx.Err() != nil { // won after SIGTERM: give it back unannounced (R10)
			unlock(m)
			break
		}
		dl := &candidate.Deadline{}
		dl.Extend(time.Now(), time.Until(m.Until())) // validity: expiry minus elapsed and drift
		candidate.Elected(token, callT)
		stopExtend := candidate.Every(ctx, env.Renew, func(ctx context.Context) {
			cctx, cancel := context.WithTimeout(ctx, env.Renew)
			defer cancel()
			if ok, err := m.ExtendContext(cctx); ok && err == nil {
				dl.Extend(time.Now(), time.Until(m.Until()))
			} else if ctx.Err() == nil && err != nil {
				candidate.Error("extend: " + err.Error()) // the validity decides
			}
		})
		reason := w.Lead(ctx, token, dl.Lost)
		stopExtend()
		candidate.SteppedDown(reason)
		unlock(m)
	}
	os.Exit(0)
}

func unlock(m *redsync.Mutex) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	m.UnlockContext(ctx)
}
