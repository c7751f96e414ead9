// Command redlock-restart: Redlock (redsync) over independent in-memory Redis servers, where
// a server that crashed and restarted empty takes part in the next quorum at once.
//
// Reference: https://github.com/go-redsync/redsync/issues/186 ("Potential quorum-loss
// edge-case": a server of the holder's majority loses the lock, and another client then gets
// a majority of its own; open); Redis's own description of Redlock,
// https://redis.io/docs/latest/develop/clients/patterns/distributed-locks/ ("Performance,
// crash recovery and fsync": without persistence a restarted instance must stay unavailable
// for longer than the maximum TTL, "delayed restarts"); Kleppmann, "How to do distributed
// locking", https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html.
//
// Mechanism: the holder has the key on every server (five in the project's redis-multi). A
// majority of them crash and come back empty within the holder's validity (the rows use a
// 60 s TTL: restarting three containers took 18-27 s on the loaded 2-core machine). The
// next waiter gets that majority and leads while the old holder still trusts its validity
// (its extends now fail, but the validity decides). The token is the acquisition time in Unix ms (Redlock has none), so with an
// unfenced resource the old holder's writes land after the new one's.
//
// Fix (the documented delayed restart, enforced on the client): a server whose uptime is below
// the TTL + 1 s counts as unavailable for acquire and extend, so a restarted server joins a
// quorum only after every lock it forgot has expired. The price: after the servers first
// start nobody leads for TTL + 1 s either (a new server looks like a restarted one), so the
// rows give the warmup that long. Built with -tags buggy every answering server counts. go-redsync/redsync v4 with go-redis v9, as examples/stores/redis-multi.
//
//	CGO_ENABLED=0 go build -tags buggy -o /tmp/redlock-restart ./examples/bugs/redlock-restart
package main

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

// settledPool is a redsync pool that refuses a connection to a server that restarted less
// than minUptime ago (the fix); with buggy it passes every connection through.
type settledPool struct {
	redsyncredis.Pool
	cli       *redis.Client
	minUptime time.Duration
}

var errRestarted = errors.New("server restarted less than a TTL ago: not part of a quorum yet")

func (p settledPool) Get(ctx context.Context) (redsyncredis.Conn, error) {
	if !buggy {
		info, err := p.cli.Info(ctx, "server").Result()
		if err != nil {
			return nil, err
		}
		if up, ok := uptime(info); !ok || up < p.minUptime {
			return nil, errRestarted
		}
	}
	return p.Pool.Get(ctx)
}

// uptime reads uptime_in_seconds from INFO server.
func uptime(info string) (time.Duration, bool) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "uptime_in_seconds:"); ok {
			s, err := strconv.Atoi(v)
			return time.Duration(s) * time.Second, err == nil
		}
	}
	return 0, false
}

func main() {
	env := candidate.Load("redis-multi")
	ctx, stop := candidate.Signals()
	defer stop()
	timeout := max(min(env.Renew, time.Second), 100*time.Millisecond) // a dead server's dial must not hold an attempt
	var pools []redsyncredis.Pool
	for _, ep := range env.Endpoints {
		cli := redis.NewClient(&redis.Options{Addr: ep, ContextTimeoutEnabled: true,
			DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: -1})
		pools = append(pools, settledPool{Pool: goredis.NewPool(cli), cli: cli, minUptime: env.TTL + time.Second})
	}
	rs := redsync.New(pools...)
	w := candidate.NewWriter(env)
	for ctx.Err() == nil {
		candidate.Campaigning()
		m := rs.NewMutex("corpus-redlock:"+env.Election, redsync.WithExpiry(env.TTL))
		var token, callT int64
		for {
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
