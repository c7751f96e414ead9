package stores

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

const (
	etcdClientPort = "2379"
	etcdPeerPort   = "2380"
	// Fast failure detection for short tests: 100 ms heartbeats, 1 s election timeout
	// (etcd's defaults; the minimum lease TTL becomes ceil(1.5 x 1 s) = 2 s).
	etcdHeartbeatMs = 100
	etcdElectionMs  = 1000
)

// EtcdInitialCluster is the static --initial-cluster value: name=http://alias:2380,...
func EtcdInitialCluster(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=http://" + n + ":" + etcdPeerPort
	}
	return strings.Join(parts, ",")
}

// EtcdCommand is the full command line of member name in a cluster of names.
func EtcdCommand(runID, name string, names []string) []string {
	return []string{
		"/usr/local/bin/etcd",
		"--name", name,
		"--data-dir", "/var/lib/etcd/" + name,
		"--listen-client-urls", "http://0.0.0.0:" + etcdClientPort,
		"--advertise-client-urls", "http://" + name + ":" + etcdClientPort,
		"--listen-peer-urls", "http://0.0.0.0:" + etcdPeerPort,
		"--initial-advertise-peer-urls", "http://" + name + ":" + etcdPeerPort,
		"--initial-cluster", EtcdInitialCluster(names),
		"--initial-cluster-state", "new",
		"--initial-cluster-token", "splitbrain-" + runID,
		"--heartbeat-interval", fmt.Sprint(etcdHeartbeatMs),
		"--election-timeout", fmt.Sprint(etcdElectionMs),
		"--log-level", "info",
	}
}

type etcdCluster struct{ base }

func launchEtcd(ctx context.Context, env *launchEnv) (Cluster, error) {
	names := nodeNames("etcd", env.opts.Nodes)
	specs := make([]platform.NodeSpec, len(names))
	for i, n := range names {
		specs[i] = platform.NodeSpec{
			Name: n, Role: string(storekinds.Etcd), Image: env.image,
			Cmd:          EtcdCommand(env.runID, n, names),
			ExposedPorts: []string{etcdClientPort + "/tcp"},
			LogDir:       env.opts.LogDir,
			// No wait strategy: a member cannot serve before a quorum is up, and the nodes
			// start concurrently. Readiness is the client round trip below.
		}
	}
	start := time.Now()
	nodes, err := startNodes(ctx, env, specs)
	if err != nil {
		return nil, err
	}
	c := &etcdCluster{base{kind: storekinds.Etcd, nodes: nodes, port: etcdClientPort}}
	c.nodeRT = c.memberRoundTrip
	if err := finishLaunch(ctx, env, &c.base, start, c.serverVersion); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *etcdCluster) client(ep string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints: []string{ep}, DialTimeout: time.Second, Logger: zap.NewNop(),
	})
}

// memberRoundTrip writes through one member and reads back linearizably: both need a quorum.
func (c *etcdCluster) memberRoundTrip(ctx context.Context, name, ep string) error {
	cli, err := c.client(ep)
	if err != nil {
		return fmt.Errorf("etcd %s (%s): %w", name, ep, err)
	}
	defer cli.Close()
	// A member without a leader holds a proposal until it times out; ask first (cheap, never
	// blocks) so the poll can retry at once.
	sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	st, err := cli.Status(sctx, ep)
	cancel()
	if err != nil {
		return fmt.Errorf("etcd %s: status: %w", name, err)
	}
	if st.Leader == 0 {
		return fmt.Errorf("etcd %s: no leader yet", name)
	}
	key := "/splitbrain/ready/" + name
	val := fmt.Sprint(time.Now().UnixNano())
	if _, err := cli.Put(ctx, key, val); err != nil {
		return fmt.Errorf("etcd %s: put: %w", name, err)
	}
	res, err := cli.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("etcd %s: get: %w", name, err)
	}
	if len(res.Kvs) != 1 || string(res.Kvs[0].Value) != val {
		return fmt.Errorf("etcd %s: read back %d values, not the one written", name, len(res.Kvs))
	}
	return nil
}

func (c *etcdCluster) serverVersion(ctx context.Context) (string, error) {
	eps, err := c.HostEndpoints(ctx)
	if err != nil {
		return "", err
	}
	cli, err := c.client(eps[0])
	if err != nil {
		return "", err
	}
	defer cli.Close()
	st, err := cli.Status(ctx, eps[0])
	if err != nil {
		return "", err
	}
	return st.Version, nil
}

// Leader asks the members for the raft leader and maps its member id to the node name.
// Members that are down are skipped.
func (c *etcdCluster) Leader(ctx context.Context) (*platform.Node, error) {
	n, err := c.leaderFromAny(ctx, etcdClientPort, c.leaderVia)
	if err != nil {
		return nil, fmt.Errorf("etcd leader: no member answered: %w", err)
	}
	return n, nil
}

func (c *etcdCluster) leaderVia(ctx context.Context, ep string) (*platform.Node, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cli, err := c.client(ep)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	st, err := cli.Status(cctx, ep)
	if err != nil {
		return nil, err
	}
	if st.Leader == 0 {
		return nil, fmt.Errorf("member at %s knows no leader (election in progress?)", ep)
	}
	ml, err := cli.MemberList(cctx)
	if err != nil {
		return nil, err
	}
	for _, m := range ml.Members {
		if m.ID == st.Leader {
			for _, n := range c.nodes {
				if n.Name() == m.Name {
					return n, nil
				}
			}
			return nil, fmt.Errorf("leader member %q is not a node of this cluster", m.Name)
		}
	}
	return nil, fmt.Errorf("leader id %x not in the member list", st.Leader)
}
