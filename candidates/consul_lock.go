//go:build !core

package candidates

// consul-lock: github.com/hashicorp/consul/api's Lock on a session of our own (TTL from the
// run's TTL, lock-delay = TTL, no health checks, behaviour release). Token = the lock key's
// LockIndex, read back consistently after Lock returns (Consul's sequencer: the server bumps
// it in the Raft transaction that grants the lock to a new session). Loss = the lock's
// channel closes (its monitor saw the key change owner, or 4 reads in a row failed), the session
// renewal finds the session gone, or the local deadline (last renewal's send time + TTL)
// passes, which the server can only reach later (it invalidates 2 × TTL after a renewal).

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	consul "github.com/hashicorp/consul/api"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// consulLockRetry is consul/api's DefaultLockRetryTime: a waiter whose acquire was refused
// by an active lock-delay sleeps this long before it tries again (not configurable).
const consulLockRetry = consul.DefaultLockRetryTime

var consulLock = runtime.Spec{
	Name: "consul-lock", Store: storekinds.Consul,
	Summary: "consul/api Lock on a TTL session with lock-delay = TTL; token = the lock key's LockIndex",
	Timing: func(c contract.Config) runtime.Timing {
		ttl := consulTTL(c.LeaseTTL)
		// Crash: the server invalidates the session 2 × TTL after its last renewal; waiters
		// wake, find the lock-delay (TTL) in force and sleep consulLockRetry, as often as
		// needed to outlast it. Handoff: Unlock releases without a lock-delay, and the
		// waiters' blocking read returns at once.
		retries := (ttl + consulLockRetry - 1) / consulLockRetry
		return runtime.Timing{TTL: ttl, Renew: ttl / 3,
			HandoffBound: time.Second, FailoverBound: 2*ttl + time.Duration(retries)*consulLockRetry + time.Second}
	},
	New: newConsulLock,
}

// consulTTL is the run's TTL, at least the servers' session_ttl_min (1 s), in whole ms.
func consulTTL(d time.Duration) time.Duration {
	return max(d, time.Second).Round(time.Millisecond)
}

type consulRecipe struct {
	env  runtime.Env
	conn *consulConn
	cli  *consul.Client
	key  string

	session   string
	stopRenew func()
	renewLost context.Context
	lock      *consul.Lock
	held      bool
	pending   *pendingLock // a Lock call a cancelled campaign left running
	stopTerm  context.CancelFunc
}

type pendingLock struct {
	stop chan struct{}
	res  chan lockResult
}

type lockResult struct {
	ch  <-chan struct{}
	err error
}

func newConsulLock(_ context.Context, env runtime.Env) (runtime.Recipe, error) {
	ttl := env.Timing.TTL
	conn := newConsulConn(env.Endpoints, env.NodeID, ttl/2)
	cli, err := consul.NewClient(&consul.Config{
		Address: "consul.invalid:8500", // the dialer picks the server; see consulConn
		Scheme:  "http",
		// Blocking reads (the lock's wait and its monitor) return after TTL/4 when nothing
		// changed, well inside the request timeout (TTL/2, R16).
		WaitTime:   ttl / 4,
		HttpClient: &http.Client{Transport: conn, Timeout: ttl / 2},
	})
	if err != nil {
		return nil, fmt.Errorf("consul client for %v: %w", env.Endpoints, err)
	}
	return &consulRecipe{env: env, conn: conn, cli: cli, key: "splitbrain/" + env.ElectionName + "/leader"}, nil
}

func (r *consulRecipe) Campaign(ctx context.Context) (runtime.Term, error) {
	ttl := r.env.Timing.TTL
	sentAt := runtime.RealMono()
	sid, _, err := r.cli.Session().CreateNoChecks(&consul.SessionEntry{
		Name: "splitbrain-" + r.env.NodeID, TTL: ttl.String(), LockDelay: ttl, Behavior: consul.SessionBehaviorRelease,
	}, r.writeOpts(ctx))
	if err != nil {
		r.conn.rotate()
		return runtime.Term{}, fmt.Errorf("create session: %w", err)
	}
	r.session = sid
	dl := &deadline{}
	dl.set(sentAt.Add(ttl))
	// The session is renewed from now on, also while we wait for the lock.
	r.renewLost, r.stopRenew = runtime.Monitor(r.env.Timing.Renew, func(mctx context.Context) error {
		sentAt := runtime.RealMono()
		entry, _, err := r.cli.Session().Renew(sid, r.writeOpts(mctx))
		switch {
		case err != nil:
			r.conn.rotate()
			if end := dl.get(); !runtime.RealMono().Before(end) {
				return fmt.Errorf("session renewal failing past the local deadline: %w", err)
			}
			return nil // try again next period, on another server
		case entry == nil:
			return errors.New("consul session invalidated (renewal found no session)")
		}
		dl.set(sentAt.Add(ttl))
		return nil
	})

	lock, err := r.cli.LockOpts(&consul.LockOptions{
		Key: r.key, Value: []byte(r.env.NodeID), Session: sid,
		LockWaitTime: ttl / 4, // the wait's blocking read; stopCh is looked at between reads
		// The lock's monitor rides out failed reads (a server that lost its quorum, one that
		// was killed) for a few tries, the next one through another server (renewal
		// failures rotate the connection). Safety meanwhile rests on the local deadline.
		MonitorRetries: 3, MonitorRetryTime: ttl / 4,
	})
	if err != nil {
		return runtime.Term{}, fmt.Errorf("lock options: %w", err)
	}
	r.lock = lock
	p := &pendingLock{stop: make(chan struct{}), res: make(chan lockResult, 1)}
	r.conn.acquireSent.Store(0)
	go func() {
		ch, err := lock.Lock(p.stop)
		p.res <- lockResult{ch, err}
	}()
	var lr lockResult
	select {
	case lr = <-p.res:
	case <-ctx.Done():
		close(p.stop)
		r.pending = p
		return runtime.Term{}, ctx.Err()
	case <-r.renewLost.Done():
		close(p.stop)
		r.pending = p
		return runtime.Term{}, fmt.Errorf("while waiting for the lock: %w", context.Cause(r.renewLost))
	}
	if lr.err != nil {
		r.conn.rotate()
		return runtime.Term{}, fmt.Errorf("lock: %w", lr.err)
	}
	if lr.ch == nil {
		return runtime.Term{}, errors.New("lock: stopped before it was acquired")
	}
	r.held = true
	callT := r.conn.acquireSent.Load()

	// The token: the key as the Raft leader has it now, still ours.
	pair, _, err := r.cli.KV().Get(r.key, (&consul.QueryOptions{RequireConsistent: true}).WithContext(ctx))
	if err != nil {
		return runtime.Term{}, fmt.Errorf("read the lock's LockIndex: %w", err)
	}
	if pair == nil || pair.Session != sid || pair.LockIndex < 1 {
		return runtime.Term{}, fmt.Errorf("lock returned but key %s is no longer held by our session: not leading", r.key)
	}

	lost, lose := context.WithCancelCause(context.Background())
	// Not derived from ctx: a shutdown must end the term as "sigterm", not as a loss.
	tctx, stop := context.WithCancel(context.Background())
	r.stopTerm = stop
	go func() {
		select {
		case <-lr.ch:
			r.conn.rotate() // the server we read through may be the reason: resign via another
			lose(errors.New("consul lock lost: the lock's channel closed"))
		case <-r.renewLost.Done():
			lose(context.Cause(r.renewLost))
		case <-tctx.Done():
			lose(nil)
		}
	}()
	valid := func() error {
		if now, end := runtime.RealMono(), dl.get(); !now.Before(end) {
			return fmt.Errorf("local session deadline passed %s ago (no renewal for TTL %s)", now.Sub(end).Round(time.Millisecond), ttl)
		}
		return nil
	}
	return runtime.Term{Token: int64(pair.LockIndex), Lost: lost, Valid: valid, CallT: callT}, nil
}

// Resign releases the lock first (a release sets no lock-delay, so a waiter takes over at
// once), then destroys the session. A Lock call a cancelled campaign left running is stopped;
// if it won after all, that lock is released too (R10).
func (r *consulRecipe) Resign(ctx context.Context) error {
	var errs []error
	if r.stopTerm != nil {
		r.stopTerm()
		r.stopTerm = nil
	}
	if p := r.pending; p != nil {
		r.pending = nil
		select {
		case lr := <-p.res:
			r.held = lr.ch != nil
		case <-ctx.Done():
			errs = append(errs, errors.New("a cancelled lock attempt did not stop in time"))
		}
	}
	if r.held && r.lock != nil {
		if err := r.lock.Unlock(); err != nil && !errors.Is(err, consul.ErrLockNotHeld) {
			r.conn.rotate()
			errs = append(errs, err)
		}
	}
	r.held, r.lock = false, nil
	if r.stopRenew != nil {
		r.stopRenew()
		r.stopRenew = nil
	}
	if r.session != "" {
		if _, err := r.cli.Session().Destroy(r.session, r.writeOpts(ctx)); err != nil {
			r.conn.rotate()
			errs = append(errs, fmt.Errorf("destroy session: %w", err))
		}
		r.session = ""
	}
	return errors.Join(errs...)
}

func (r *consulRecipe) Close() error {
	r.conn.CloseIdleConnections()
	return nil
}

func (r *consulRecipe) writeOpts(ctx context.Context) *consul.WriteOptions {
	return (&consul.WriteOptions{}).WithContext(ctx)
}

// consulConn is the HTTP transport of one candidate. Applications talk to their local
// Consul agent; a candidate has none, so it talks to one server at a time (starting at one
// picked by its node id, so candidates spread over the servers) and moves to the next when a
// dial or a request fails. Every dial resolves the server's name again (R12). It also notes
// when the last lock acquire was sent (the elected event's call_t).
type consulConn struct {
	eps         []string
	cur         atomic.Int64
	tr          *http.Transport
	acquireSent atomic.Int64
}

func newConsulConn(eps []string, node string, dialTimeout time.Duration) *consulConn {
	c := &consulConn{eps: eps}
	h := fnv.New32a()
	h.Write([]byte(node))
	c.cur.Store(int64(h.Sum32() % uint32(max(len(eps), 1))))
	d := &net.Dialer{Timeout: dialTimeout}
	c.tr = &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var last error
			for range c.eps {
				i := c.cur.Load()
				conn, err := d.DialContext(ctx, network, c.eps[int(i)%len(c.eps)])
				if err == nil {
					return conn, nil
				}
				last = err
				c.cur.CompareAndSwap(i, i+1)
				if ctx.Err() != nil {
					break
				}
			}
			return nil, last
		},
		MaxIdleConnsPerHost: 4,
	}
	return c
}

func (c *consulConn) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && hasParam(req.URL, "acquire") {
		c.acquireSent.Store(history.Now())
	}
	return c.tr.RoundTrip(req)
}

// rotate moves to the next server; open connections to the old one finish their request.
func (c *consulConn) rotate() {
	c.cur.Add(1)
	c.tr.CloseIdleConnections()
}

func (c *consulConn) CloseIdleConnections() { c.tr.CloseIdleConnections() }

func hasParam(u *url.URL, name string) bool {
	_, ok := u.Query()[name]
	return ok
}
