// Command pg-advisory-unchecked: leader election on a PostgreSQL session-level advisory lock
// whose holder never checks, after taking it, that its session (and so the lock) still
// exists.
//
// Reference: https://github.com/JasperFx/wolverine/issues/2602 ("Leader split-brain: stale
// Postgres advisory lock causes two leaders": the backend is terminated server-side, Postgres
// releases the lock, another node acquires it, and the old leader's HasLock stays true); the
// fix of the same mistake elsewhere: https://github.com/timescale/prometheus-postgresql-adapter/pull/91
// ("Add recurring Postgres connection check for advisory lock").
//
// Mechanism: the leader is cut off from PostgreSQL. The server's TCP keepalives and
// tcp_user_timeout (set for the session, as the project's postgres-advisory recipe does) end
// its backend about a TTL later, which frees the lock, and a waiter takes it. The old
// leader, which never asks, writes on. Wolverine is C#; this is its logic with pgx v5.
//
// Fix: the adapter's check of the lock on the own session, made before every write (each
// answered check extends a TTL/2 deadline, before the server can free the lock after a
// silent cut), and a lost connection ends the term at once. The adapter checks on a timer
// only; the guided search flagged that version (2026-11-26): a connection reset ends the
// session, and frees the lock, the moment the server sees it, and the old leader wrote on
// until its next check, 9 writes after its successor's election (docs/findings.md). Built
// with -tags buggy the candidate never checks.
//
//	CGO_ENABLED=0 go build -tags buggy -o /tmp/pg-advisory-unchecked ./examples/bugs/pg-advisory-unchecked
package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

func main() {
	env := candidate.Load("postgres")
	ctx, stop := candidate.Signals()
	defer stop()
	cfg, err := config(env)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pg-advisory-unchecked:", err)
		os.Exit(64)
	}
	h := fnv.New32a()
	h.Write([]byte(env.Election))
	key := int64(h.Sum32() & 0x7fffffff)
	w := candidate.NewWriter(env)
	for ctx.Err() == nil {
		candidate.Campaigning()
		if err := term(ctx, env, cfg, key, w); err != nil && ctx.Err() == nil {
			candidate.Error(err.Error())
			candidate.Sleep(ctx, env.Retry)
		}
	}
	os.Exit(0)
}

// config connects to the one endpoint with the server-side TCP settings that make
// PostgreSQL end a silent session (and free its locks) about a TTL after the link died.
func config(env candidate.Env) (*pgx.ConnConfig, error) {
	host, port, err := net.SplitHostPort(env.Endpoints[0])
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	p, _ := strconv.ParseUint(port, 10, 16)
	cfg.Host, cfg.Port = host, uint16(p)
	cfg.User, cfg.Database = getenv("SPLITBRAIN_STORE_USER", "postgres"), getenv("SPLITBRAIN_STORE_DATABASE", "postgres")
	cfg.Password = os.Getenv("SPLITBRAIN_STORE_PASSWORD")
	cfg.TLSConfig = nil
	cfg.ConnectTimeout = 2 * time.Second
	ttlS := max(1, int(env.TTL/time.Second)-1)
	cfg.RuntimeParams["tcp_keepalives_idle"] = "1"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "1"
	cfg.RuntimeParams["tcp_keepalives_count"] = strconv.Itoa(ttlS)
	cfg.RuntimeParams["tcp_user_timeout"] = strconv.Itoa(int(env.TTL / time.Millisecond))
	dialer := &net.Dialer{Timeout: 2 * time.Second,
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: ttlS},
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(env.TTL/time.Millisecond))
			})
			return errors.Join(err, serr)
		}}
	cfg.DialFunc = dialer.DialContext
	return cfg, nil
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// term is one campaign on a fresh session, and the tenure if it wins.
func term(ctx context.Context, env candidate.Env, cfg *pgx.ConnConfig, key int64, w *candidate.Writer) error {
	cctx, cancel := context.WithTimeout(ctx, env.TTL)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background()) // closing the session frees its advisory locks
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS corpus_terms (name text PRIMARY KEY, term bigint NOT NULL)`); err != nil {
		if _, err2 := conn.Exec(ctx, `SELECT 1 FROM corpus_terms LIMIT 1`); err2 != nil {
			return fmt.Errorf("create term table: %w", err)
		}
	}
	var callT int64
	for {
		callT = candidate.Monotonic()
		qctx, cancel := context.WithTimeout(ctx, env.TTL)
		var got bool
		err := conn.QueryRow(qctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got)
		cancel()
		if err != nil {
			return fmt.Errorf("try lock: %w", err)
		}
		if got {
			break
		}
		if !candidate.Sleep(ctx, env.Retry) {
			return nil
		}
	}
	// The token: a term counter bumped in the session that holds the lock.
	var token int64
	qctx, cancel := context.WithTimeout(ctx, env.TTL)
	err = conn.QueryRow(qctx, `INSERT INTO corpus_terms (name, term) VALUES ($1, 1)
		ON CONFLICT (name) DO UPDATE SET term = corpus_terms.term + 1 RETURNING term`, env.Election).Scan(&token)
	cancel()
	if err != nil {
		return fmt.Errorf("draw token: %w", err)
	}
	if ctx.Err() != nil {
		return nil // won after SIGTERM: closing the session gives it back unannounced (R10)
	}
	dl := &candidate.Deadline{}
	dl.Extend(time.Now(), env.TTL/2)
	lost := func() string { return "" } // BUG (buggy): the lock is held as long as we think so
	if !buggy {
		lost = func() string {
			if why := dl.Lost(); why != "" {
				return why
			}
			sent := time.Now()
			qctx, cancel := context.WithTimeout(ctx, env.TTL/4)
			defer cancel()
			var held bool
			err := conn.QueryRow(qctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
				AND pid = pg_backend_pid() AND granted AND classid::int8 = 0 AND objid::int8 = $1 AND objsubid = 1)`, key).Scan(&held)
			switch {
			case err == nil && held:
				dl.Extend(sent, env.TTL/2)
			case err == nil:
				dl.Lose("advisory lock no longer held by this session")
			case conn.IsClosed():
				// Reset, closed, or given up by pgx after the timeout: the session is gone
				// or going, and the server frees the lock with it.
				dl.Lose("connection to PostgreSQL lost: the lock ends with the session")
			}
			return dl.Lost()
		}
	}
	candidate.Elected(token, callT)
	reason := w.Lead(ctx, token, lost)
	candidate.SteppedDown(reason)
	uctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, key)
	cancel()
	return nil
}
