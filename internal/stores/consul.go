//go:build !core

package stores

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	consul "github.com/hashicorp/consul/api"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

const (
	consulHTTPPort = "8500"
	consulRaftPort = "8300"
	consulDataDir  = "/consul/data"
	// ConsulSessionTTLMin is the smallest session TTL the servers grant (Consul's default is
	// 10 s, far above the 2 s TTL runs use). The server invalidates a session 2 × TTL after
	// its last renewal (Consul's grace multiplier), never before TTL.
	ConsulSessionTTLMin = time.Second
)

// ConsulCommand is the command line of server name in a cluster of names: every server
// expects all of them (-bootstrap-expect) and keeps retrying to join them by name, so the
// start order does not matter and a restarted server (new IP) finds its peers again.
// raft_multiplier 1 gives Raft timing for a LAN (1 s heartbeat and election timeouts,
// 500 ms leader lease) instead of the default ×5.
func ConsulCommand(name string, names []string) []string {
	cmd := []string{"consul", "agent", "-server",
		"-node=" + name,
		"-bootstrap-expect=" + fmt.Sprint(len(names)),
		"-data-dir=" + consulDataDir,
		"-client=0.0.0.0",
		// The run network's address, named rather than left to Consul's guess.
		`-bind={{ GetInterfaceIP "eth0" }}`,
		"-retry-interval=1s",
		"-dns-port=-1",
		"-log-level=info",
		"-hcl=performance { raft_multiplier = 1 }",
		fmt.Sprintf("-hcl=session_ttl_min = %q", ConsulSessionTTLMin.String()),
	}
	for _, n := range names {
		cmd = append(cmd, "-retry-join="+n)
	}
	return cmd
}

type consulCluster struct{ base }

func launchConsul(ctx context.Context, env *launchEnv) (Cluster, error) {
	names := nodeNames("consul", env.opts.Nodes)
	specs := make([]platform.NodeSpec, len(names))
	for i, n := range names {
		specs[i] = platform.NodeSpec{
			Name: n, Role: string(storekinds.Consul), Image: env.image,
			Cmd:          ConsulCommand(n, names),
			ExposedPorts: []string{consulHTTPPort + "/tcp"},
			LogDir:       env.opts.LogDir,
		}
	}
	start := time.Now()
	nodes, err := startNodes(ctx, env, specs)
	if err != nil {
		return nil, err
	}
	c := &consulCluster{base{kind: storekinds.Consul, nodes: nodes, port: consulHTTPPort}}
	c.nodeRT = consulServerRoundTrip
	c.membership = c.allVoters
	if err := finishLaunch(ctx, env, &c.base, start, c.serverVersion); err != nil {
		return nil, err
	}
	return c, nil
}

// consulClient talks to one server's HTTP API; each call is bounded by ctx (and 5 s).
func consulClient(ep string) (*consul.Client, error) {
	return consul.NewClient(&consul.Config{Address: ep, Scheme: "http",
		HttpClient: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			DialContext: (&net.Dialer{Timeout: time.Second}).DialContext, DisableKeepAlives: true}}})
}

// consulServerRoundTrip asks the server for the Raft leader, then writes a key through it and
// reads it back consistently: the write is a Raft commit and the consistent read is served by
// a leader that checked it still leads, so both need a quorum the server can reach.
func consulServerRoundTrip(ctx context.Context, name, ep string) error {
	cli, err := consulClient(ep)
	if err != nil {
		return fmt.Errorf("consul %s (%s): %w", name, ep, err)
	}
	leader, err := cli.Status().LeaderWithQueryOptions((&consul.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("consul %s (%s): status/leader: %w", name, ep, err)
	}
	if leader == "" {
		return fmt.Errorf("consul %s: no leader yet", name)
	}
	key := "splitbrain/ready/" + name
	val := fmt.Sprint(time.Now().UnixNano())
	if _, err := cli.KV().Put(&consul.KVPair{Key: key, Value: []byte(val)}, (&consul.WriteOptions{}).WithContext(ctx)); err != nil {
		return fmt.Errorf("consul %s: put: %w", name, err)
	}
	kv, _, err := cli.KV().Get(key, (&consul.QueryOptions{RequireConsistent: true}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("consul %s: get: %w", name, err)
	}
	if kv == nil || string(kv.Value) != val {
		return fmt.Errorf("consul %s: did not read back the value written", name)
	}
	return nil
}

// allVoters checks, in the leader's Raft configuration, that every server is a voter at its
// current address. A server that was down long enough for autopilot to prune it (serf's
// failure detection, then autopilot's next 10 s pass) rejoins as a non-voter and is promoted
// at the first pass after it has been stable for server_stabilization_time (10 s): 10-20 s
// (measured: still a non-voter 16 s after its restart, all three up). Until then it serves,
// by forwarding to the leader, but does not count towards a quorum: with three servers,
// freezing one of the other two stops the cluster.
func (c *consulCluster) allVoters(ctx context.Context) error {
	eps, err := c.HostEndpoints(ctx)
	if err != nil {
		return err
	}
	cli, err := consulClient(eps[0])
	if err != nil {
		return err
	}
	cfg, err := cli.Operator().RaftGetConfiguration((&consul.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("consul raft configuration: %w", err)
	}
	var problems []string
	for _, n := range c.nodes {
		ip, err := n.IP(ctx)
		if err != nil {
			return err
		}
		// By address: Consul names an entry's node from the serf member at that address, so
		// an entry left at a server's old address shows as "(unknown)", not by its name.
		want := net.JoinHostPort(ip, consulRaftPort)
		i := slices.IndexFunc(cfg.Servers, func(s *consul.RaftServer) bool { return s.Address == want })
		switch {
		case i < 0:
			problems = append(problems, fmt.Sprintf("%s (%s) is not in it", n.Name(), want))
		case !cfg.Servers[i].Voter:
			problems = append(problems, n.Name()+" is a non-voter (autopilot promotes it 10-20 s after it rejoined)")
		}
	}
	if len(cfg.Servers) != len(c.nodes) {
		var entries []string
		for _, s := range cfg.Servers {
			entries = append(entries, s.Node+"@"+s.Address)
		}
		problems = append(problems, fmt.Sprintf("%d entries for %d servers: %s", len(cfg.Servers), len(c.nodes), strings.Join(entries, ", ")))
	}
	if len(problems) > 0 {
		return fmt.Errorf("consul raft configuration: %s", strings.Join(problems, "; "))
	}
	return nil
}

func (c *consulCluster) serverVersion(ctx context.Context) (string, error) {
	eps, err := c.HostEndpoints(ctx)
	if err != nil {
		return "", err
	}
	cli, err := consulClient(eps[0])
	if err != nil {
		return "", err
	}
	self, err := cli.Agent().Self()
	if err != nil {
		return "", err
	}
	if v, ok := self["Config"]["Version"].(string); ok && v != "" {
		return v, nil
	}
	return "", errors.New("agent/self has no Config.Version")
}

// Leader asks the servers for the Raft leader (/v1/status/leader, "ip:8300") and maps its
// address to the node with that IP. Servers that are down or know no leader are skipped.
func (c *consulCluster) Leader(ctx context.Context) (*platform.Node, error) {
	n, err := c.leaderFromAny(ctx, consulHTTPPort, c.leaderVia)
	if err != nil {
		return nil, fmt.Errorf("consul leader: no server named one: %w", err)
	}
	return n, nil
}

func (c *consulCluster) leaderVia(ctx context.Context, ep string) (*platform.Node, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cli, err := consulClient(ep)
	if err != nil {
		return nil, err
	}
	addr, err := cli.Status().LeaderWithQueryOptions((&consul.QueryOptions{}).WithContext(cctx))
	if err != nil {
		return nil, err
	}
	if addr == "" {
		return nil, fmt.Errorf("server at %s knows no leader (election in progress?)", ep)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("leader address %q: %w", addr, err)
	}
	for _, n := range c.nodes {
		if ip, err := n.IP(cctx); err == nil && ip == host {
			return n, nil
		}
	}
	return nil, fmt.Errorf("leader %s is not the address of any node of this cluster", addr)
}

// Reset releases every held lock (a release, unlike a session invalidation, sets no
// lock-delay on the key, so the next run can take it at once), destroys every session and
// deletes every key, verified by listing both.
func (c *consulCluster) Reset(ctx context.Context) error {
	eps, err := c.HostEndpoints(ctx)
	if err != nil {
		return err
	}
	var cli *consul.Client
	var lastErr error
	for _, ep := range eps { // any server that is part of the quorum will do
		if lastErr = consulServerRoundTrip(ctx, "reset", ep); lastErr == nil {
			cli, lastErr = consulClient(ep)
			break
		}
	}
	if cli == nil {
		return fmt.Errorf("consul reset: no server serves: %w", lastErr)
	}
	wo := (&consul.WriteOptions{}).WithContext(ctx)
	qo := (&consul.QueryOptions{RequireConsistent: true}).WithContext(ctx)
	pairs, _, err := cli.KV().List("", qo)
	if err != nil {
		return fmt.Errorf("consul reset: list keys: %w", err)
	}
	for _, p := range pairs {
		if p.Session != "" {
			if _, _, err := cli.KV().Release(p, wo); err != nil {
				return fmt.Errorf("consul reset: release %s: %w", p.Key, err)
			}
		}
	}
	sessions, _, err := cli.Session().List(qo)
	if err != nil {
		return fmt.Errorf("consul reset: list sessions: %w", err)
	}
	for _, s := range sessions {
		if _, err := cli.Session().Destroy(s.ID, wo); err != nil {
			return fmt.Errorf("consul reset: destroy session %s: %w", s.ID, err)
		}
	}
	if _, err := cli.KV().DeleteTree("", wo); err != nil {
		return fmt.Errorf("consul reset: delete all keys: %w", err)
	}
	keys, _, err := cli.KV().Keys("", "", qo)
	if err != nil {
		return fmt.Errorf("consul reset: list keys: %w", err)
	}
	if sessions, _, err = cli.Session().List(qo); err != nil {
		return fmt.Errorf("consul reset: list sessions: %w", err)
	}
	if len(keys) > 0 || len(sessions) > 0 {
		return fmt.Errorf("consul reset: %d keys (%s) and %d sessions left", len(keys), strings.Join(keys, ", "), len(sessions))
	}
	return nil
}
