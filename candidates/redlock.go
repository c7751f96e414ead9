package candidates

// redlock: the Redlock algorithm through github.com/go-redsync/redsync/v4 (its go-redis v9
// pool), over N independent Redis servers (store redis-multi). A candidate holds the lock
// when SET NX PX succeeded on a majority within the attempt's time budget; it extends the
// lock every renew interval while leading (Extend: compare-and-pexpire on every server,
// needs a majority again) and unlocks on resign.
//
// Redlock hands out no fencing token (Kleppmann, "How to do distributed locking", 2016).
// What its users do instead, and what this recipe does, is stamp the tenure with the time
// the lock was acquired, read on the candidate's clock (Unix ms). That clock honours the
// contract's offset file, so a clock fault moves the token: a holder whose clock runs behind
// an earlier holder's mints a lower token, and token order breaks. Without clock faults the
// stamps grow, because a holder acquires only after the previous holder's keys were deleted
// or expired.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var redlock = runtime.Spec{
	Name: "redlock", Store: storekinds.RedisMulti, ClockAware: true,
	Summary: "Redlock (go-redsync/redsync v4) over N independent Redis servers; no fencing token: token = acquisition time on the candidate clock (ms)",
	Timing:  redlockTiming,
	New:     newRedlock,
}

// redsync's defaults (redsync.go), kept: an attempt may take expiry × timeoutFactor, the
// validity loses expiry × driftFactor.
const (
	redlockTimeoutFactor = 0.05
	redlockDriftFactor   = 0.01
)

func redlockTiming(c contract.Config) runtime.Timing {
	retry := firstNonZero(c.RetryInterval, 50*time.Millisecond)
	attempt := time.Duration(float64(c.LeaseTTL) * redlockTimeoutFactor)
	return runtime.Timing{TTL: c.LeaseTTL, Renew: firstNonZero(c.RenewInterval, c.LeaseTTL/3), Retry: retry,
		// Poll-based: unlock → next attempt; crash → keys expire on the servers' clocks, then
		// one poll and one attempt.
		HandoffBound:  retry + attempt + 500*time.Millisecond,
		FailoverBound: c.LeaseTTL + retry + attempt + 500*time.Millisecond}
}

type redlockRecipe struct {
	env     runtime.Env
	clients []*redis.Client
	rs      *redsync.Redsync
	name    string

	mu      *redsync.Mutex // the current term's mutex, nil when none
	stopMon func()
	lastErr string
}

func newRedlock(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
	if len(env.Endpoints) == 0 {
		return nil, errors.New("redlock needs the Redis servers' endpoints (SPLITBRAIN_STORE_ENDPOINTS)")
	}
	t := max(env.Timing.Renew, 100*time.Millisecond)
	r := &redlockRecipe{env: env, name: "splitbrain:redlock:" + env.ElectionName}
	pools := make([]redsyncredis.Pool, len(env.Endpoints))
	for i, ep := range env.Endpoints {
		cli := redis.NewClient(&redis.Options{Addr: ep,
			// redsync bounds each attempt with a context deadline; go-redis ignores deadlines
			// unless told, and a server cut off by a silent partition would then hold every
			// attempt for the read timeout (3 s by default, longer than the lock's validity).
			ContextTimeoutEnabled: true,
			// No retries: a retried SET NX after a lost reply would count the server as taken.
			MaxRetries: -1, DialTimeout: t, ReadTimeout: t, WriteTimeout: t, PoolSize: 4,
			DisableIdentity: true})
		r.clients = append(r.clients, cli)
		pools[i] = goredis.NewPool(cli)
	}
	r.rs = redsync.New(pools...)
	return r, nil
}

// leaseFor is the validity redsync grants from the moment an attempt was sent.
func (r *redlockRecipe) leaseFor() time.Duration {
	ttl := r.env.Timing.TTL
	return ttl - time.Duration(float64(ttl)*redlockDriftFactor)
}

// note logs a store error on one line, once per distinct text (a waiter fails an attempt
// every poll; redsync joins one error per server, in the order they answered).
func (r *redlockRecipe) note(what string, err error) {
	if msg := what + ": " + oneLine(err).Error(); msg != r.lastErr {
		r.lastErr = msg
		r.env.Logf("%s", msg)
	}
}

// oneLine sorts and joins the per-server errors redsync joins with newlines.
func oneLine(err error) error {
	if err == nil {
		return nil
	}
	parts := strings.Split(err.Error(), "\n")
	slices.Sort(parts)
	return errors.New(strings.Join(parts, "; "))
}

func (r *redlockRecipe) Campaign(ctx context.Context) (runtime.Term, error) {
	t := r.env.Timing
	m := r.rs.NewMutex(r.name, redsync.WithExpiry(t.TTL),
		redsync.WithTimeoutFactor(redlockTimeoutFactor), redsync.WithDriftFactor(redlockDriftFactor))
	// Waiters loop around single attempts: LockContext gives up after its tries anyway
	// (32 × 50–250 ms, shorter than a crashed holder's expiry), and one attempt at a time
	// tells when the winning request was sent (call_t, and the lease start).
	var sent runtime.Instant
	var callT int64
	for {
		sent, callT = r.env.Clock.Mono(), history.Now()
		err := m.TryLockContext(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return runtime.Term{}, ctx.Err()
		}
		var taken *redsync.ErrTaken
		if !errors.As(err, &taken) && !errors.Is(err, redsync.ErrFailed) {
			r.note("acquire", err)
		}
		select {
		case <-ctx.Done():
			return runtime.Term{}, ctx.Err()
		case <-time.After(t.Retry):
		}
	}
	// The token: acquisition time on the candidate clock, what Redlock users stamp.
	token := r.env.Clock.Wall().UnixMilli()
	r.mu = m
	dl := &deadline{}
	dl.set(sent.Add(r.leaseFor()))
	lost, stop := runtime.Monitor(t.Renew, func(ctx context.Context) error {
		sentAt := r.env.Clock.Mono()
		cctx, cancel := context.WithTimeout(ctx, t.Renew)
		defer cancel()
		ok, err := m.ExtendContext(cctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case !ok && err != nil:
			return fmt.Errorf("extend failed (no majority): %w", oneLine(err))
		case !ok:
			return errors.New("extend failed: the lock expired during the call")
		}
		dl.set(sentAt.Add(r.leaseFor()))
		return nil
	})
	r.stopMon = stop
	valid := dl.valid(r.env.Clock.Mono, "lock validity")
	return runtime.Term{Token: token, Lost: lost, Valid: valid, CallT: callT}, nil
}

func (r *redlockRecipe) Resign(ctx context.Context) error {
	if r.stopMon != nil {
		r.stopMon()
		r.stopMon = nil
	}
	if r.mu == nil {
		return nil
	}
	m := r.mu
	r.mu = nil
	if ok, err := m.UnlockContext(ctx); !ok {
		// What a cut-off server still holds expires with its PX.
		return errOrNil("unlock (not on a majority)", oneLine(err))
	}
	return nil
}

func (r *redlockRecipe) Close() error {
	var errs []error
	for _, c := range r.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
