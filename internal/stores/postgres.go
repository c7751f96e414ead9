package stores

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

const (
	pgPort = "5432"
	// PGUser and PGDatabase are what candidates connect as (trust auth on the run network).
	PGUser     = "postgres"
	PGDatabase = "postgres"
)

// PostgresCommand is the server command: fsync off for speed, and server-side TCP keepalives
// of 1 s idle / 1 s interval / 3 probes, so a backend whose client vanished (host crash or
// partition) ends, and its advisory locks are freed, about 4 s after the link died.
func PostgresCommand() []string {
	return []string{"postgres",
		"-c", "listen_addresses=*",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "tcp_keepalives_idle=1",
		"-c", "tcp_keepalives_interval=1",
		"-c", "tcp_keepalives_count=3",
	}
}

// PostgresDSN is the connection string for host:port.
func PostgresDSN(hostPort string) string {
	return "postgres://" + PGUser + "@" + hostPort + "/" + PGDatabase + "?sslmode=disable&connect_timeout=2"
}

type pgCluster struct{ base }

func launchPostgres(ctx context.Context, env *launchEnv) (Cluster, error) {
	spec := platform.NodeSpec{
		Name: "postgres", Role: string(storekinds.Postgres), Image: env.image,
		Cmd: PostgresCommand(),
		// The official image's entrypoint needs one of these; the local one ignores it.
		Env:          map[string]string{"POSTGRES_HOST_AUTH_METHOD": "trust"},
		ExposedPorts: []string{pgPort + "/tcp"},
		LogDir:       env.opts.LogDir,
	}
	start := time.Now()
	nodes, err := startNodes(ctx, env, []platform.NodeSpec{spec})
	if err != nil {
		return nil, err
	}
	c := &pgCluster{base{kind: storekinds.Postgres, nodes: nodes, port: pgPort}}
	c.nodeRT = func(ctx context.Context, _, _ string) error { _, err := c.query(ctx, "select 1::text"); return err }
	if err := finishLaunch(ctx, env, &c.base, start, func(ctx context.Context) (string, error) {
		return c.query(ctx, "show server_version")
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *pgCluster) query(ctx context.Context, sql string) (string, error) {
	ep, err := c.nodes[0].Endpoint(ctx, pgPort)
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, PostgresDSN(ep))
	if err != nil {
		return "", fmt.Errorf("postgres (%s): %w", ep, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var out string
	if err := conn.QueryRow(ctx, sql).Scan(&out); err != nil {
		return "", fmt.Errorf("postgres %q: %w", sql, err)
	}
	return out, nil
}
