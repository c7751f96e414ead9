package stores

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Resetter is a cluster that can wipe what leader-election recipes leave behind, so a
// reused cluster shows the next run what a fresh one shows.
type Resetter interface {
	// Reset wipes the recipes' state and verifies the wipe; an error means the cluster must
	// not be reused.
	Reset(ctx context.Context) error
}

// Reset wipes c (see Resetter); clusters without a Reset cannot be reused.
func Reset(ctx context.Context, c Cluster) error {
	r, ok := c.(Resetter)
	if !ok {
		return fmt.Errorf("store %s has no reset: it cannot be reused", c.Kind())
	}
	return r.Reset(ctx)
}

// Healthy reports why c is unfit for another run: a node not running or paused (frozen), or
// a failing client round trip. SIGSTOPped processes are the caller's to check (Docker still
// reports them as running).
func Healthy(ctx context.Context, c Cluster) error {
	var errs []error
	for _, n := range c.Nodes() {
		st, err := n.State(ctx)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !st.Running:
			errs = append(errs, fmt.Errorf("%s is %s", n.Name(), st.Status))
		case st.Paused:
			errs = append(errs, fmt.Errorf("%s is frozen", n.Name()))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.Ready(rctx)
}

// Reset: FLUSHALL (keys: locks, fence counters) and SCRIPT FLUSH on every server, verified by DBSIZE 0.
func (c *redisCluster) Reset(ctx context.Context) error {
	eps, err := c.HostEndpoints(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for i, ep := range eps {
		cli := redisClient(ep)
		name := c.nodes[i].Name()
		if err := cli.FlushAll(ctx).Err(); err != nil {
			errs = append(errs, fmt.Errorf("redis %s: FLUSHALL: %w", name, err))
		} else if err := cli.ScriptFlush(ctx).Err(); err != nil {
			errs = append(errs, fmt.Errorf("redis %s: SCRIPT FLUSH: %w", name, err))
		} else if n, err := cli.DBSize(ctx).Result(); err != nil || n != 0 {
			errs = append(errs, fmt.Errorf("redis %s: %d keys left after FLUSHALL (%v)", name, n, err))
		}
		cli.Close()
	}
	return errors.Join(errs...)
}

// Reset deletes every key and revokes every lease (the election keys hang off candidate
// sessions' leases), verified by a count of 0 of both. Revisions go on counting: etcd
// cannot rewind them, so tokens (create revisions) of a reused cluster start higher.
func (c *etcdCluster) Reset(ctx context.Context) error {
	eps, err := c.HostEndpoints(ctx)
	if err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	ls, err := cli.Leases(ctx)
	if err != nil {
		return fmt.Errorf("etcd: list leases: %w", err)
	}
	for _, l := range ls.Leases {
		if _, err := cli.Revoke(ctx, l.ID); err != nil && !strings.Contains(err.Error(), "not found") {
			return fmt.Errorf("etcd: revoke lease %x: %w", l.ID, err)
		}
	}
	if _, err := cli.Delete(ctx, "\x00", clientv3.WithFromKey()); err != nil {
		return fmt.Errorf("etcd: delete all keys: %w", err)
	}
	res, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("etcd: count keys: %w", err)
	}
	if res.Count != 0 {
		return fmt.Errorf("etcd: %d keys left after delete", res.Count)
	}
	if ls, err = cli.Leases(ctx); err != nil || len(ls.Leases) != 0 {
		return fmt.Errorf("etcd: leases left after revoke (%v)", err)
	}
	return nil
}

// Reset deletes every znode tree but /zookeeper (the recipes' election trees, including
// ephemerals of sessions that died with their candidates), verified by listing the root.
func (c *zkCluster) Reset(ctx context.Context) error {
	eps, err := c.HostEndpoints(ctx)
	if err != nil {
		return err
	}
	conn, events, err := zk.Connect(eps, 4*time.Second, zk.WithLogger(zkNopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	defer conn.Close()
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-ctx.Done():
			return fmt.Errorf("zookeeper: no session: %w", ctx.Err())
		}
	}
	done := make(chan error, 1)
	go func() { done <- zkWipe(conn) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("zookeeper: wipe: %w", ctx.Err())
	}
}

func zkWipe(conn *zk.Conn) error {
	kids, _, err := conn.Children("/")
	if err != nil {
		return fmt.Errorf("zookeeper: list /: %w", err)
	}
	for _, k := range kids {
		if k == "zookeeper" {
			continue
		}
		if err := zkDeleteTree(conn, "/"+k); err != nil {
			return err
		}
	}
	if kids, _, err = conn.Children("/"); err != nil {
		return fmt.Errorf("zookeeper: list /: %w", err)
	}
	if left := slices.DeleteFunc(kids, func(k string) bool { return k == "zookeeper" }); len(left) > 0 {
		return fmt.Errorf("zookeeper: znodes left after wipe: %v", left)
	}
	return nil
}

func zkDeleteTree(conn *zk.Conn, path string) error {
	kids, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("zookeeper: list %s: %w", path, err)
	}
	for _, k := range kids {
		if err := zkDeleteTree(conn, path+"/"+k); err != nil {
			return err
		}
	}
	if err := conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zookeeper: delete %s: %w", path, err)
	}
	return nil
}

// Reset terminates every other client backend (frees advisory locks of candidates whose
// connections outlived them) and drops the tables recipes created in the public schema
// (e.g. the term table); verified by no advisory lock, no other client and no table left.
func (c *pgCluster) Reset(ctx context.Context) error {
	ep, err := c.nodes[0].Endpoint(ctx, pgPort)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, PostgresDSN(ep))
	if err != nil {
		return fmt.Errorf("postgres (%s): %w", ep, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, sql := range []string{
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'`,
		`DO $$ DECLARE t record; BEGIN
		   FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' LOOP
		     EXECUTE 'DROP TABLE IF EXISTS public.' || quote_ident(t.tablename) || ' CASCADE';
		   END LOOP; END $$`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("postgres reset: %w", err)
		}
	}
	// Terminated backends exit asynchronously: poll until they (and their locks) are gone.
	const check = `SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory')
		+ (SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend')
		+ (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')`
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left int64
		if err := conn.QueryRow(ctx, check).Scan(&left); err != nil {
			return fmt.Errorf("postgres reset check: %w", err)
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres: %d advisory locks, other clients or tables left 5s after reset", left)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
