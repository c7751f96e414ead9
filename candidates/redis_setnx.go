package candidates

// redis-setnx: one Lua script does SET NX PX and INCR of the fencing counter atomically, so
// tokens follow acquisition order. Renew = compare-and-pexpire, release = compare-and-delete
// (both Lua, keyed by a value unique to this term). The local lease deadline starts when the
// acquire/renew request was sent, on the candidate clock; the leader steps down when it
// passes or a renew fails. Waiting candidates poll.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var redisSetNX = runtime.Spec{
	Name: "redis-setnx", Store: storekinds.Redis, ClockAware: true,
	Summary: "Redis SET NX PX + INCR in one Lua script; token = fence counter",
	Steps:   []string{"lock-acquired"},
	Timing:  redisTiming,
	New: func(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
		return newRedisLease(env, acquireAtomic)
	},
}

func redisTiming(c contract.Config) runtime.Timing {
	retry := firstNonZero(c.RetryInterval, 50*time.Millisecond)
	return runtime.Timing{TTL: c.LeaseTTL, Renew: firstNonZero(c.RenewInterval, c.LeaseTTL/3), Retry: retry,
		// Poll-based: release → next poll; crash → key expiry (server clock) + one poll.
		HandoffBound: retry + 500*time.Millisecond, FailoverBound: c.LeaseTTL + retry + 500*time.Millisecond}
}

const (
	// KEYS[1] lock, KEYS[2] fence counter; ARGV[1] holder value, ARGV[2] ttl ms.
	luaAcquire = `if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) end return 0`
	luaRenew   = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`
	luaRelease = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`
)

// leaseDrift is subtracted from the local deadline for clock rate differences (as redsync does).
const leaseDrift = 0.01

// How a redis lease recipe takes the lock and draws its fencing token.
type acquireMode int

const (
	acquireAtomic     acquireMode = iota // redis-setnx: SET NX PX and INCR in one Lua script
	acquireTicketLast                    // redis-split-incr: INCR when the campaign starts, SET NX polled later
	acquireIncrAfter                     // redis-incr-after-setnx: SET NX, then INCR as a second command
)

type redisLease struct {
	env      runtime.Env
	rdb      *redis.Client
	lockKey  string
	fenceKey string
	mode     acquireMode
	incrGap  time.Duration // acquireIncrAfter: time between SET NX returning and INCR

	terms   int
	value   string // holder value of the current term, "" when none
	stopMon func() // ends the term's renew monitor
}

func newRedisClient(env runtime.Env) (*redis.Client, error) {
	if len(env.Endpoints) != 1 {
		return nil, fmt.Errorf("redis recipes need exactly one endpoint, got %v", env.Endpoints)
	}
	t := max(env.Timing.Renew, 100*time.Millisecond)
	return redis.NewClient(&redis.Options{Addr: env.Endpoints[0],
		// No retries: a retried SET NX after a lost reply would report "held by another".
		MaxRetries: -1, DialTimeout: t, ReadTimeout: t, WriteTimeout: t, PoolSize: 4,
		DisableIdentity: true}), nil
}

func newRedisLease(env runtime.Env, mode acquireMode) (*redisLease, error) {
	rdb, err := newRedisClient(env)
	if err != nil {
		return nil, err
	}
	return &redisLease{env: env, rdb: rdb, mode: mode,
		lockKey: "splitbrain:lock:" + env.ElectionName, fenceKey: "splitbrain:fence:" + env.ElectionName}, nil
}

// deadline is the local lease end on the candidate clock's monotonic line.
type deadline struct {
	mu sync.Mutex
	at runtime.Instant
}

func (d *deadline) set(t runtime.Instant) { d.mu.Lock(); d.at = t; d.mu.Unlock() }
func (d *deadline) get() runtime.Instant  { d.mu.Lock(); defer d.mu.Unlock(); return d.at }

// valid is a term's Valid check: an error once now (the candidate clock's monotonic line)
// reaches the deadline; what names the deadline in that error.
func (d *deadline) valid(now func() runtime.Instant, what string) func() error {
	return func() error {
		if t, end := now(), d.get(); !t.Before(end) {
			return fmt.Errorf("%s passed on the candidate clock (%s ago)", what, t.Sub(end).Round(time.Millisecond))
		}
		return nil
	}
}

func (r *redisLease) leaseFor() time.Duration {
	return r.env.Timing.TTL - time.Duration(float64(r.env.Timing.TTL)*leaseDrift)
}

// retryWait is the poll period. The split-INCR control polls with jitter, as buggy code in
// the wild does: with a fixed period the waiters keep the poll phases of their campaign
// starts, which follow their ticket order, so the lowest ticket won every race and the
// token inversion hid (a smoke run saw tokens 1, 2, 3, 4 in order).
func (r *redisLease) retryWait() time.Duration {
	retry := r.env.Timing.Retry
	if r.mode != acquireTicketLast || retry <= 0 {
		return retry
	}
	return retry/2 + rand.N(retry)
}

func (r *redisLease) Campaign(ctx context.Context) (runtime.Term, error) {
	t := r.env.Timing
	r.terms++
	r.value = r.env.NodeID + "/" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/" + strconv.Itoa(r.terms)
	ttlMs := strconv.FormatInt(t.TTL.Milliseconds(), 10)
	var token, ticket int64
	if r.mode == acquireTicketLast {
		// The bug on purpose: the fencing token is drawn once, when the campaign starts, and
		// the lock is taken later by a separate SET NX. A candidate that waits while a later
		// one (with a higher ticket) wins then wins itself with its older, lower token.
		var err error
		if ticket, err = r.rdb.Incr(ctx, r.fenceKey).Result(); err != nil {
			return runtime.Term{}, errOrNil("draw fencing ticket", err)
		}
		r.env.Step("token-drawn")
	}
	var sent runtime.Instant
	var callT int64
	for {
		sent, callT = r.env.Clock.Mono(), history.Now()
		var err error
		token, err = r.acquire(ctx, ttlMs, ticket)
		if err != nil {
			if ctx.Err() != nil {
				return runtime.Term{}, ctx.Err()
			}
			return runtime.Term{}, err
		}
		if token > 0 {
			if r.mode != acquireIncrAfter {
				r.env.Step("lock-acquired")
			}
			break
		}
		select {
		case <-ctx.Done():
			return runtime.Term{}, ctx.Err()
		case <-time.After(r.retryWait()):
		}
	}
	if r.mode == acquireIncrAfter {
		// The second bug of this control: the lease is counted from when the acquire
		// finished, not from when SET NX was sent (redis-setnx's rule).
		sent = r.env.Clock.Mono()
	}
	dl := &deadline{}
	dl.set(sent.Add(r.leaseFor()))
	lost, stop := runtime.Monitor(t.Renew, func(ctx context.Context) error {
		sentAt := r.env.Clock.Mono()
		n, err := r.rdb.Eval(ctx, luaRenew, []string{r.lockKey}, r.value, ttlMs).Int64()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return fmt.Errorf("renew failed: %w", err)
		case n == 0:
			return errors.New("renew refused: the lock is gone or held by another")
		}
		dl.set(sentAt.Add(r.leaseFor()))
		return nil
	})
	r.stopMon = stop
	valid := dl.valid(r.env.Clock.Mono, "local lease deadline")
	return runtime.Term{Token: token, Lost: lost, Valid: valid, CallT: callT}, nil
}

// acquire returns the new token, or 0 when another candidate holds the lock. In
// acquireTicketLast mode the token is the ticket drawn at the start of the campaign.
func (r *redisLease) acquire(ctx context.Context, ttlMs string, ticket int64) (int64, error) {
	if r.mode == acquireAtomic {
		n, err := r.rdb.Eval(ctx, luaAcquire, []string{r.lockKey, r.fenceKey}, r.value, ttlMs).Int64()
		if err != nil {
			return 0, fmt.Errorf("acquire: %w", err)
		}
		return n, nil
	}
	ok, err := r.rdb.SetNX(ctx, r.lockKey, r.value, r.env.Timing.TTL).Result()
	if err != nil || !ok {
		return 0, errOrNil("acquire", err)
	}
	if r.mode == acquireTicketLast {
		return ticket, nil
	}
	// acquireIncrAfter: the lock is ours, the token is drawn by a second command. A pause
	// longer than the TTL between the two lets the lock expire and another candidate take it
	// and draw a lower token than the one this candidate draws when it resumes.
	r.env.Step("lock-acquired")
	if r.incrGap > 0 {
		time.Sleep(r.incrGap)
	}
	n, err := r.rdb.Incr(ctx, r.fenceKey).Result()
	if err != nil {
		return 0, fmt.Errorf("incr fence after SET NX: %w", err)
	}
	r.env.Step("token-drawn")
	return n, nil
}

func errOrNil(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (r *redisLease) Resign(ctx context.Context) error {
	if r.stopMon != nil {
		r.stopMon()
		r.stopMon = nil
	}
	if r.value == "" {
		return nil
	}
	err := r.rdb.Eval(ctx, luaRelease, []string{r.lockKey}, r.value).Err()
	r.value = ""
	return errOrNil("release", err)
}

func (r *redisLease) Close() error { return r.rdb.Close() }
