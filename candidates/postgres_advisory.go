package candidates

// postgres-advisory: one dedicated connection (never a pool: lock and unlock must share a
// session) polls pg_try_advisory_lock; the winner bumps a term row in the same session and
// uses the term as token. "Still held?" is read from pg_locks for our own backend pid: asking
// pg_try_advisory_lock again would always succeed (advisory locks are re-entrant) and stack.
//
// Bounded loss under partition: the session sets server-side TCP keepalives and
// tcp_user_timeout so the server ends a silent backend (freeing the lock) about TTL after
// the link died; the client uses the same socket settings and stops acting TTL/2 after its
// last successful check was sent, before the server can free the lock. A SIGSTOPped leader is
// kept alive by its kernel's TCP stack: no failover until it resumes (availability cost).

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sys/unix"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var postgresAdvisory = runtime.Spec{
	Name: "postgres-advisory", Store: storekinds.Postgres,
	Summary: "PostgreSQL session advisory lock on one connection + term row; token = term",
	Steps:   []string{"lock-acquired", "token-drawn"},
	Timing: func(c contract.Config) runtime.Timing {
		ttl := pgTTL(c.LeaseTTL)
		return runtime.Timing{TTL: ttl, Renew: firstNonZero(c.RenewInterval, ttl/4), Retry: firstNonZero(c.RetryInterval, 50*time.Millisecond),
			// A killed process's socket is closed by its kernel: the lock is free at once.
			HandoffBound: time.Second, FailoverBound: time.Second}
	},
	New: newPostgresAdvisory,
}

// pgTTL: keepalive settings have 1 s resolution, and the TTL must hold idle + two probes.
// With one (TTL 2 s) a single probe answered a second late or lost ended a healthy session:
// a SIGSTOPped leader's, whose kernel keeps it alive, lost its lock (a CI run on a loaded
// host; a 1 s silence during the pause did it in 4 runs of 4, /work/runs/s35/pgrepro2).
func pgTTL(d time.Duration) time.Duration {
	return time.Duration(max(3, math.Ceil(d.Seconds()))) * time.Second
}

// pgLockClass is the first half of the two-int advisory key, so our locks are recognisable.
const pgLockClass = 0x5b5b

type pgRecipe struct {
	env  runtime.Env
	key  int32
	cfg  *pgx.ConnConfig
	mu   sync.Mutex // guards conn between the monitor and Resign
	conn *pgx.Conn
	pid  uint32

	stopMon func() // ends the term's lock-check monitor
}

func newPostgresAdvisory(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
	if len(env.Endpoints) != 1 {
		return nil, fmt.Errorf("postgres-advisory needs exactly one endpoint, got %v", env.Endpoints)
	}
	host, port, _ := net.SplitHostPort(env.Endpoints[0])
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	p, _ := strconv.ParseUint(port, 10, 16)
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = host, uint16(p), env.StoreUser, env.StorePassword, env.StoreDatabase
	cfg.ConnectTimeout = 2 * time.Second
	cfg.TLSConfig = nil
	ttl := env.Timing.TTL
	ttlS := int(ttl / time.Second)
	// Server side: keepalive idle 1 s, then probes every 1 s; the session ends once nothing was
	// heard for the TTL (ttl-1 probes, one of them may go unanswered).
	cfg.RuntimeParams["tcp_keepalives_idle"] = "1"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "1"
	cfg.RuntimeParams["tcp_keepalives_count"] = strconv.Itoa(max(1, ttlS-1))
	cfg.RuntimeParams["tcp_user_timeout"] = strconv.Itoa(int(ttl / time.Millisecond))
	cfg.RuntimeParams["application_name"] = "splitbrain-" + env.NodeID
	dialer := &net.Dialer{Timeout: 2 * time.Second,
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: max(1, ttlS-1)},
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(ttl/time.Millisecond))
			})
			return errors.Join(err, serr)
		}}
	cfg.DialFunc = dialer.DialContext
	h := fnv.New32a()
	h.Write([]byte(env.ElectionName))
	return &pgRecipe{env: env, cfg: cfg, key: int32(h.Sum32() & 0x7fffffff)}, nil
}

func (r *pgRecipe) connect(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, r.cfg)
	if err != nil {
		return fmt.Errorf("connect %s: %w", r.env.Endpoints[0], err)
	}
	_, err = conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS splitbrain_terms (name text PRIMARY KEY, term bigint NOT NULL, holder text NOT NULL)`)
	var pgErr *pgconn.PgError
	if err != nil && !(errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "42P07")) {
		conn.Close(context.Background())
		return fmt.Errorf("create term table: %w", err)
	}
	r.conn, r.pid = conn, conn.PgConn().PID()
	return nil
}

func (r *pgRecipe) Campaign(ctx context.Context) (runtime.Term, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == nil || r.conn.IsClosed() {
		if err := r.connect(ctx); err != nil {
			return runtime.Term{}, err
		}
	}
	t := r.env.Timing
	var callT int64
	for {
		callT = history.Now()
		qctx, cancel := context.WithTimeout(ctx, t.TTL)
		var got bool
		err := r.conn.QueryRow(qctx, `SELECT pg_try_advisory_lock($1, $2)`, pgLockClass, r.key).Scan(&got)
		cancel()
		if err != nil {
			r.closeLocked()
			if ctx.Err() != nil {
				return runtime.Term{}, ctx.Err()
			}
			return runtime.Term{}, fmt.Errorf("pg_try_advisory_lock: %w", err)
		}
		if got {
			r.env.Step("lock-acquired") // the term row is bumped next, in a second statement
			break
		}
		select {
		case <-ctx.Done():
			return runtime.Term{}, ctx.Err()
		case <-time.After(t.Retry):
		}
	}
	sent := time.Now()
	var term int64
	qctx, cancel := context.WithTimeout(ctx, t.TTL)
	err := r.conn.QueryRow(qctx, `INSERT INTO splitbrain_terms AS s (name, term, holder) VALUES ($1, 1, $2)
		ON CONFLICT (name) DO UPDATE SET term = s.term + 1, holder = $2 RETURNING term`,
		r.env.ElectionName, r.env.NodeID).Scan(&term)
	cancel()
	if err != nil {
		r.closeLocked() // closing the session frees the lock
		return runtime.Term{}, fmt.Errorf("bump term: %w", err)
	}
	r.env.Step("token-drawn")

	var (
		okMu   sync.Mutex
		lastOK = sent // send time of the last successful check
	)
	lost, stop := runtime.Monitor(t.Renew, func(ctx context.Context) error {
		sentAt := time.Now()
		if err := r.stillHeld(ctx, t.Renew); err != nil {
			return err
		}
		okMu.Lock()
		lastOK = sentAt
		okMu.Unlock()
		return nil
	})
	r.stopMon = stop
	valid := func() error {
		okMu.Lock()
		defer okMu.Unlock()
		if time.Since(lastOK) > t.TTL/2 {
			return fmt.Errorf("no successful lock check for %s (limit %s)", time.Since(lastOK).Round(time.Millisecond), t.TTL/2)
		}
		return nil
	}
	return runtime.Term{Token: term, Lost: lost, Valid: valid, CallT: callT}, nil
}

// stillHeld reads pg_locks for our backend; it never re-acquires.
func (r *pgRecipe) stillHeld(ctx context.Context, timeout time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == nil {
		return errors.New("connection closed")
	}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var pid uint32
	var held bool
	err := r.conn.QueryRow(qctx, `SELECT pg_backend_pid(), EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
		AND granted AND pid = pg_backend_pid() AND classid::int8 = $1 AND objid::int8 = $2 AND objsubid = 2)`,
		pgLockClass, r.key).Scan(&pid, &held)
	switch {
	case err != nil:
		r.closeLocked()
		return fmt.Errorf("lock check failed: %w", err)
	case pid != r.pid:
		return fmt.Errorf("backend pid changed %d -> %d: session lost", r.pid, pid)
	case !held:
		return errors.New("advisory lock no longer held by our session")
	}
	return nil
}

func (r *pgRecipe) Resign(ctx context.Context) error {
	if r.stopMon != nil {
		r.stopMon()
		r.stopMon = nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == nil {
		return nil
	}
	if _, err := r.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`); err != nil {
		r.closeLocked() // ending the session frees the lock as well
		return fmt.Errorf("unlock: %w", err)
	}
	return nil
}

func (r *pgRecipe) closeLocked() {
	if r.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		r.conn.Close(ctx)
		cancel()
		r.conn = nil
	}
}

func (r *pgRecipe) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeLocked()
	return nil
}

func firstNonZero(a, b time.Duration) time.Duration {
	if a > 0 {
		return a
	}
	return b
}
