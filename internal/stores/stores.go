// Package stores launches the store clusters leader-election recipes run against: etcd,
// ZooKeeper, PostgreSQL, Redis, N independent Redis servers (for Redlock), a
// DynamoDB-compatible server and Consul, each on the run's network through internal/platform,
// ready only after a real client round trip.
package stores

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// Kind names a store cluster type: a store kind of internal/storekinds (storekinds.Etcd, ...),
// where its facts are declared once.
type Kind string

// launchers start a cluster of each kind. Adding a store is its definition in
// internal/storekinds, its launcher file and one entry here (docs/architecture.md).
var launchers = map[Kind]func(context.Context, *launchEnv) (Cluster, error){
	storekinds.Etcd:       launchEtcd,
	storekinds.ZooKeeper:  launchZooKeeper,
	storekinds.Postgres:   launchPostgres,
	storekinds.Redis:      launchRedis,
	storekinds.RedisMulti: launchRedisMulti,
	storekinds.DynamoDB:   launchDynamoDB,
	storekinds.Consul:     launchConsul,
	storekinds.Kubernetes: launchKubernetes,
}

// Linked reports whether this build can launch kind: the core build (-tags core) leaves out
// the stores whose clients are heavy (unlinked_core.go), and rows on them go to the full binary.
func Linked(k Kind) bool { return launchers[k] != nil }

// Kinds lists the valid kinds, sorted.
func Kinds() []string { return storekinds.Names() }

// ParseKind turns a flag value into a Kind, naming the valid ones on error.
func ParseKind(s string) (Kind, error) {
	if _, ok := storekinds.Lookup(s); ok {
		return Kind(s), nil
	}
	return "", fmt.Errorf("unknown store %q: valid stores are %s", s, strings.Join(Kinds(), ", "))
}

// DefaultNodes is the node count a kind gets when Options.Nodes is 0.
func DefaultNodes(k Kind) int {
	d, _ := storekinds.Lookup(string(k))
	return d.DefaultNodes
}

// ImageRole is the image role a kind's servers run (its main one, see ImageRoles).
func ImageRole(k Kind) images.Role {
	d, _ := storekinds.Lookup(string(k))
	return images.Role(d.Role)
}

// ImageRoles are all image roles a kind's launcher needs, the main one first.
func ImageRoles(k Kind) []images.Role {
	d, _ := storekinds.Lookup(string(k))
	var out []images.Role
	for _, r := range d.Roles() {
		out = append(out, images.Role(r))
	}
	return out
}

// PodHost is a cluster whose candidates run "in" Pods (kubernetes). No kubelet runs, so the
// harness plays the node: it creates a candidate's Pod object before each start of its
// process (the Pod stays Pending: no scheduler, no node) and deletes it when the process is
// gone, as a kubelet does when a container's process exits for good (docs/stores.md,
// "Pods without a kubelet"). Recipes that tie state to their Pod (leader-for-life) rely on
// it; other stores have no Pods and do not implement it.
type PodHost interface {
	// PodName is candidate node's Pod name: one per candidate, so the contract can name it
	// in the candidate's environment; every process start gets a new Pod (a new UID).
	PodName(node string) string
	// CreatePod creates node's Pod anew, deleting a leftover of the same name first, and
	// returns its UID.
	CreatePod(ctx context.Context, node string) (uid string, err error)
	// DeletePod deletes node's Pod if its UID is uid (another incarnation is left alone).
	// A Pod that is gone already is no error.
	DeletePod(ctx context.Context, node, uid string) error
}

// CandidateCredentials is what a candidate needs to reach a store that authenticates
// clients (kubernetes), beyond the endpoints.
type CandidateCredentials struct {
	User       string
	Kubeconfig []byte
}

// Credentialed is a cluster that issues per-candidate credentials.
type Credentialed interface {
	// Credentials for candidate node reaching the store at endpoints (as it sees them:
	// directly or through the store fault proxy).
	Credentials(node string, endpoints []string) (CandidateCredentials, error)
}

// ErrNotSupported is returned by Leader for stores without a leader (PostgreSQL, Redis).
var ErrNotSupported = errors.New("not supported")

// Options configure Launch.
type Options struct {
	Kind    Kind
	Nodes   int            // 0 = the kind's default (storekinds.Def.DefaultNodes)
	Profile images.Profile // "" = local
	Images  images.Set     // pre-resolved images; when nil Launch calls images.Ensure
	LogDir  string         // node logs go to <LogDir>/<node>.log
	// ReadyTimeout bounds the wait for the first successful round trip (default 60 s).
	ReadyTimeout time.Duration
	// ZooKeeper tuning; zero values take the defaults documented in docs/stores.md.
	ZKTickTime time.Duration
	// ExtraEnv and ExtraFiles go into every node of the cluster: the run uses them to put
	// libfaketime in front of servers whose clocks a nemesis plan will skew.
	ExtraEnv   map[string]string
	ExtraFiles []platform.File
}

// Validate checks the options and fills in defaults.
func (o *Options) Validate() error {
	info, ok := storekinds.Lookup(string(o.Kind))
	if !ok {
		return fmt.Errorf("unknown store %q: valid stores are %s", o.Kind, strings.Join(Kinds(), ", "))
	}
	if o.Nodes == 0 {
		o.Nodes = info.DefaultNodes
	}
	if o.Nodes < info.MinNodes || o.Nodes > info.MaxNodes {
		if info.MinNodes == info.MaxNodes {
			return fmt.Errorf("store %s runs exactly %d node(s), not %d: drop --store-nodes", o.Kind, info.MinNodes, o.Nodes)
		}
		return fmt.Errorf("store %s supports %d..%d nodes, not %d", o.Kind, info.MinNodes, info.MaxNodes, o.Nodes)
	}
	if o.Profile == "" {
		o.Profile = images.ProfileLocal
	}
	if _, err := images.ParseProfile(string(o.Profile)); err != nil {
		return err
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 60 * time.Second
	}
	if o.ZKTickTime == 0 {
		o.ZKTickTime = defaultZKTick
	}
	if o.ZKTickTime < 100*time.Millisecond || o.ZKTickTime > 5*time.Second {
		return fmt.Errorf("ZooKeeper tick time %v is out of range: use 100ms..5s", o.ZKTickTime)
	}
	return nil
}

// Cluster is a running store cluster.
type Cluster interface {
	Kind() Kind
	Nodes() []*platform.Node
	// Endpoints are alias:port addresses for containers on the run network, one per node.
	Endpoints() []string
	// HostEndpoints are host:port addresses reachable from the harness, read fresh (restarts
	// change published ports).
	HostEndpoints(ctx context.Context) ([]string, error)
	// Ready does a real client round trip (with quorum where the store has one) and returns
	// its error; it does not retry.
	Ready(ctx context.Context) error
	// NodeRoundTrip is the same round trip through one node only. For etcd and ZooKeeper it
	// succeeds only if that node is part of a quorum (so a minority side fails).
	NodeRoundTrip(ctx context.Context, n *platform.Node) error
	// WaitReady retries Ready until it succeeds or ctx ends.
	WaitReady(ctx context.Context) error
	// Version is the server version as the server reports it.
	Version() string
	// Leader is the node the store reports as its leader (kinds whose definition says
	// HasLeader); ErrNotSupported for the others.
	Leader(ctx context.Context) (*platform.Node, error)
	// RestartNode starts a node again (after a kill or stop) and waits until the cluster serves.
	// It thaws a frozen node and starts one Docker reports as not running; right after a
	// SIGKILL wait until State().Running is false first, or there is nothing to start yet.
	RestartNode(ctx context.Context, n *platform.Node) error
	// ReadyDuration is how long Launch took from the first container start to ready.
	ReadyDuration() time.Duration
	// StartDuration is the part of ReadyDuration spent creating and starting the containers
	// (the Docker engine's share; the rest is the store forming its cluster).
	StartDuration() time.Duration
	// Close removes the cluster's containers (not the network, which the run owns).
	Close(ctx context.Context) error
}

// launchEnv is what every launcher gets.
type launchEnv struct {
	eng    *platform.Engine
	net    *platform.Network
	runID  string
	opts   Options
	image  string     // the kind's main role
	images images.Set // every role of ImageRoles
}

// Launch starts a cluster of opts.Kind on net and returns it once ready. On error nothing
// of the cluster is left running.
func Launch(ctx context.Context, eng *platform.Engine, net *platform.Network, runID string, opts Options) (Cluster, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if net == nil {
		return nil, fmt.Errorf("launch %s: no network: create one with Engine.NewNetwork", opts.Kind)
	}
	launch, ok := launchers[opts.Kind]
	if !ok {
		return nil, fmt.Errorf("launch %s: this build has no launcher for it (add one to launchers in internal/stores/stores.go)", opts.Kind)
	}
	if launch == nil {
		return nil, fmt.Errorf("launch %s: this is splitbrain's core build (-tags core), which links no %s client: use the full binary (make build)", opts.Kind, opts.Kind)
	}
	set := opts.Images
	roles := ImageRoles(opts.Kind)
	for _, r := range roles {
		if set[r] == "" {
			var err error
			set, err = images.Ensure(ctx, opts.Profile, roles...)
			if err != nil {
				return nil, fmt.Errorf("launch %s: images: %w", opts.Kind, err)
			}
			break
		}
	}
	for _, r := range roles {
		if set[r] == "" {
			return nil, fmt.Errorf("launch %s: images.Ensure returned no %s image", opts.Kind, r)
		}
	}
	return launch(ctx, &launchEnv{eng: eng, net: net, runID: runID, opts: opts, image: set[ImageRole(opts.Kind)], images: set})
}

// base carries what every cluster type shares.
type base struct {
	kind     Kind
	nodes    []*platform.Node
	port     string
	version  string
	readyDur time.Duration
	startDur time.Duration
	// nodeRT is the round trip through the node with the given host endpoint.
	nodeRT func(ctx context.Context, name, hostEP string) error
	// membership, when set, checks after the round trips that every node is a full member
	// again: a node can serve (forwarding to the leader) before it counts towards a quorum.
	membership func(ctx context.Context) error
}

func (b *base) Kind() Kind                   { return b.kind }
func (b *base) Nodes() []*platform.Node      { return append([]*platform.Node(nil), b.nodes...) }
func (b *base) Version() string              { return b.version }
func (b *base) ReadyDuration() time.Duration { return b.readyDur }
func (b *base) StartDuration() time.Duration { return b.startDur }

func (b *base) Endpoints() []string {
	out := make([]string, len(b.nodes))
	for i, n := range b.nodes {
		out[i] = n.Alias() + ":" + b.port
	}
	return out
}

func (b *base) HostEndpoints(ctx context.Context) ([]string, error) {
	out := make([]string, len(b.nodes))
	for i, n := range b.nodes {
		ep, err := n.Endpoint(ctx, b.port)
		if err != nil {
			return nil, err
		}
		out[i] = ep
	}
	return out, nil
}

// Ready does the round trip through every node, all at once, then the membership check.
func (b *base) Ready(ctx context.Context) error {
	if err := platform.Each(len(b.nodes), 0, func(i int) error { return b.NodeRoundTrip(ctx, b.nodes[i]) }); err != nil {
		return err
	}
	if b.membership != nil {
		return b.membership(ctx)
	}
	return nil
}

func (b *base) NodeRoundTrip(ctx context.Context, n *platform.Node) error {
	if !b.owns(n) {
		return fmt.Errorf("node %s is not part of this %s cluster", n.Name(), b.kind)
	}
	ep, err := n.Endpoint(ctx, b.port)
	if err != nil {
		return err
	}
	return b.nodeRT(ctx, n.Name(), ep)
}

func (b *base) WaitReady(ctx context.Context) error { return retry(ctx, b.Ready) }

func (b *base) Leader(context.Context) (*platform.Node, error) {
	return nil, fmt.Errorf("leader of a %s cluster: %w (it has no leader election of its own)", b.kind, ErrNotSupported)
}

func (b *base) RestartNode(ctx context.Context, n *platform.Node) error {
	return b.restartWith(ctx, n, b.WaitReady)
}

// restartWith thaws or starts n as needed, then waits with ready (a cluster whose readiness
// differs from base's passes its own).
func (b *base) restartWith(ctx context.Context, n *platform.Node, ready func(context.Context) error) error {
	if !b.owns(n) {
		return fmt.Errorf("restart: node %s is not part of this %s cluster", n.Name(), b.kind)
	}
	if st, err := n.State(ctx); err == nil && st.Paused {
		if err := n.Thaw(ctx); err != nil {
			return err
		}
	}
	if st, err := n.State(ctx); err != nil {
		return err
	} else if !st.Running {
		if err := n.Start(ctx); err != nil {
			return err
		}
	}
	return ready(ctx)
}

func (b *base) owns(n *platform.Node) bool {
	for _, m := range b.nodes {
		if m == n {
			return true
		}
	}
	return false
}

func (b *base) Close(ctx context.Context) error {
	return platform.Each(len(b.nodes), 0, func(i int) error { return b.nodes[i].Terminate(ctx) })
}

// startNodes starts the specs concurrently; on any failure it removes those that started.
func startNodes(ctx context.Context, env *launchEnv, specs []platform.NodeSpec) ([]*platform.Node, error) {
	nodes := make([]*platform.Node, len(specs))
	err := platform.Each(len(specs), 0, func(i int) error {
		s := specs[i]
		s.Env = withExtraEnv(s.Env, env.opts.ExtraEnv)
		s.Files = append(append([]platform.File(nil), s.Files...), env.opts.ExtraFiles...)
		var err error
		nodes[i], err = env.eng.Start(ctx, env.runID, env.net, s)
		return err
	})
	if err != nil {
		for _, n := range nodes {
			if n != nil {
				n.Terminate(ctx)
			}
		}
		return nil, err
	}
	return nodes, nil
}

// finishLaunch waits for readiness, records the time and the version; on failure it removes
// the nodes and returns an error carrying the last ready error.
func finishLaunch(ctx context.Context, env *launchEnv, b *base, start time.Time, version func(context.Context) (string, error)) error {
	b.startDur = time.Since(start)
	rctx, cancel := context.WithTimeout(ctx, env.opts.ReadyTimeout)
	defer cancel()
	if err := b.WaitReady(rctx); err != nil {
		b.Close(ctx)
		return fmt.Errorf("%s cluster not ready within %v: %w (node logs: %s)", b.kind, env.opts.ReadyTimeout, err, logHint(env.opts.LogDir))
	}
	b.readyDur = time.Since(start)
	v, err := version(ctx)
	if err != nil {
		b.Close(ctx)
		return fmt.Errorf("%s server version: %w", b.kind, err)
	}
	b.version = v
	return nil
}

func logHint(dir string) string {
	if dir == "" {
		return "set Options.LogDir to keep them"
	}
	return dir
}

// retry calls f until it succeeds or ctx ends, returning the last error.
func retry(ctx context.Context, f func(context.Context) error) error {
	var last error
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := f(actx)
		cancel()
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func nodeNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i+1)
	}
	return out
}

func withExtraEnv(base, extra map[string]string) map[string]string {
	if len(extra) == 0 {
		return base
	}
	out := make(map[string]string, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// leaderFromAny asks each node in turn (via, on its port) for the store's leader and returns
// the first answer; nodes that are down or know no leader are skipped.
func (b *base) leaderFromAny(ctx context.Context, port string, via func(ctx context.Context, ep string) (*platform.Node, error)) (*platform.Node, error) {
	lastErr := errors.New("no node")
	for _, m := range b.nodes {
		ep, err := m.Endpoint(ctx, port)
		if err != nil {
			lastErr = err
			continue
		}
		n, err := via(ctx, ep)
		if err == nil {
			return n, nil
		}
		lastErr = err
	}
	return nil, lastErr
}
