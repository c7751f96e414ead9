package stores

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

const redisPort = "6379"

// RedisCommand runs the server reachable from the run network, without persistence.
func RedisCommand() []string {
	return []string{"redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"}
}

type redisCluster struct{ base }

func launchRedis(ctx context.Context, env *launchEnv) (Cluster, error) {
	return launchRedisNodes(ctx, env, storekinds.Redis, []string{"redis"})
}

func launchRedisMulti(ctx context.Context, env *launchEnv) (Cluster, error) {
	return launchRedisNodes(ctx, env, storekinds.RedisMulti, nodeNames("redis", env.opts.Nodes))
}

func launchRedisNodes(ctx context.Context, env *launchEnv, kind Kind, names []string) (Cluster, error) {
	specs := make([]platform.NodeSpec, len(names))
	for i, n := range names {
		specs[i] = platform.NodeSpec{
			Name: n, Role: string(storekinds.Redis), Image: env.image,
			Cmd:          RedisCommand(),
			ExposedPorts: []string{redisPort + "/tcp"},
			LogDir:       env.opts.LogDir,
		}
	}
	start := time.Now()
	nodes, err := startNodes(ctx, env, specs)
	if err != nil {
		return nil, err
	}
	c := &redisCluster{base{kind: kind, nodes: nodes, port: redisPort}}
	c.nodeRT = redisPing
	if err := finishLaunch(ctx, env, &c.base, start, c.serverVersion); err != nil {
		return nil, err
	}
	return c, nil
}

func redisClient(ep string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: ep, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, Protocol: 2})
}

// redisPing needs the server to answer PING (redis-multi servers are independent).
func redisPing(ctx context.Context, name, ep string) error {
	cli := redisClient(ep)
	defer cli.Close()
	res, err := cli.Ping(ctx).Result()
	if err != nil {
		return fmt.Errorf("redis %s (%s): PING: %w", name, ep, err)
	}
	if res != "PONG" {
		return fmt.Errorf("redis %s: PING answered %q", name, res)
	}
	return nil
}

func (c *redisCluster) serverVersion(ctx context.Context) (string, error) {
	eps, err := c.HostEndpoints(ctx)
	if err != nil {
		return "", err
	}
	cli := redisClient(eps[0])
	defer cli.Close()
	info, err := cli.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("no redis_version in INFO server")
}
