package platform

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Mount bind-mounts a host directory into a container, always read-only: the harness writes
// there (candidate clock files) and the container only reads. A directory, not a file: a
// single-file bind mount keeps the inode it was given and never sees a rename over it.
type Mount struct {
	HostDir string // absolute host path of an existing directory
	Target  string // absolute path in the container
}

// File is copied into a container before it starts.
type File struct {
	Path    string // absolute path in the container
	Content []byte
	Mode    int64 // e.g. 0o644; 0 means 0o644
}

// NodeSpec describes one container of a run.
type NodeSpec struct {
	Name       string // DNS name on the run network (alias) and the log file's name, e.g. etcd-1
	Role       string // what it is: a store kind, candidate, resource, tools, ...
	Image      string
	Cmd        []string
	Entrypoint []string
	Env        map[string]string
	CapAdd     []string // never privileged; only what is asked for
	// ExposedPorts are the container ports the host reaches (Endpoint), e.g. "2379/tcp": at the
	// node's address on the run network, which the host routes to, unless PublishPorts. They
	// are published on ephemeral host ports all the same: given none, testcontainers publishes
	// every port the image EXPOSEs.
	ExposedPorts []string
	// PublishPorts makes Endpoint answer the published localhost port, for a server whose TLS
	// certificate names localhost (the Kubernetes API server). The other nodes are reached
	// directly: a request through the published port goes through a docker-proxy process,
	// one more process to be scheduled on a loaded machine.
	PublishPorts bool
	Wait         wait.Strategy
	Files        []File
	Mounts       []Mount
	Init         bool   // run docker-init as PID 1 (reaps zombies, forwards SIGTERM)
	NetworkMode  string // "" = the run network; "container:<id>" for sidecars sharing a netns
	User         string
	LogDir       string            // stdout+stderr go to <LogDir>/<Name>.log when set
	OnStdout     func(line []byte) // each complete stdout line, in order, without the newline
	// OnLogGap is told when output may have been lost (a log stream broke and could not be
	// reopened); the argument says why.
	OnLogGap func(why string)
}

// Validate reports the first problem of a spec with a hint how to fix it.
func (s *NodeSpec) Validate() error {
	if !namePattern.MatchString(s.Name) {
		return fmt.Errorf("node name %q is invalid: use a DNS label (lowercase letters, digits, '-'), e.g. etcd-1", s.Name)
	}
	if s.Role == "" {
		return fmt.Errorf("node %s: role is empty: set NodeSpec.Role (etcd, candidate, tools, ...)", s.Name)
	}
	if s.Image == "" {
		return fmt.Errorf("node %s: image is empty: get one from images.Ensure", s.Name)
	}
	if s.NetworkMode != "" && !strings.HasPrefix(s.NetworkMode, "container:") {
		return fmt.Errorf("node %s: network mode %q is not supported: leave it empty (run network) or use \"container:<id>\"", s.Name, s.NetworkMode)
	}
	if s.NetworkMode != "" && len(s.ExposedPorts) > 0 {
		return fmt.Errorf("node %s: a container sharing another's network (%s) has no address of its own: reach the ports at that container's", s.Name, s.NetworkMode)
	}
	for _, c := range s.CapAdd {
		if strings.EqualFold(c, "ALL") || strings.EqualFold(c, "CAP_ALL") {
			return fmt.Errorf("node %s: CapAdd ALL is refused: name the capabilities needed (e.g. NET_ADMIN)", s.Name)
		}
	}
	for _, f := range s.Files {
		if !path.IsAbs(f.Path) || strings.HasSuffix(f.Path, "/") {
			return fmt.Errorf("node %s: file path %q must be an absolute file path", s.Name, f.Path)
		}
	}
	for _, m := range s.Mounts {
		if !path.IsAbs(m.HostDir) || !path.IsAbs(m.Target) || path.Clean(m.Target) == "/" {
			return fmt.Errorf("node %s: mount %q -> %q: both must be absolute paths, the target not /", s.Name, m.HostDir, m.Target)
		}
	}
	return nil
}

// Node is one running (or stopped) container of a run.
type Node struct {
	eng   *Engine
	runID string
	spec  NodeSpec
	net   *Network
	tc    testcontainers.Container
	id    string
	logs  *logStream
	addr  netip.Addr // the fixed address it holds on net (invalid: the engine's choice)

	mu         sync.Mutex
	terminated bool
}

// ContainerName is the Docker name of a run's node.
func ContainerName(runID, node string) string { return "splitbrain-" + runID + "-" + node }

// startNode is Engine.Start's work.
func startNode(ctx context.Context, e *Engine, runID string, net *Network, spec NodeSpec) (*Node, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if net == nil && spec.NetworkMode == "" {
		return nil, fmt.Errorf("node %s: no network: pass the run's network or set NetworkMode", spec.Name)
	}
	n := &Node{eng: e, runID: runID, spec: spec, net: net}
	ls, err := newLogStream(e.cli, spec.LogDir, spec.Name, spec.OnStdout, spec.OnLogGap)
	if err != nil {
		return nil, err
	}
	n.logs = ls

	req := testcontainers.ContainerRequest{
		Image:      spec.Image,
		Name:       ContainerName(runID, spec.Name),
		Entrypoint: spec.Entrypoint,
		Cmd:        spec.Cmd,
		Env:        spec.Env,
		// Given none, testcontainers would publish every port the image EXPOSEs.
		ExposedPorts: spec.ExposedPorts,
		Labels:       Labels(runID, spec.Role, spec.Name),
		WaitingFor:   spec.Wait,
		ConfigModifier: func(c *container.Config) {
			if spec.NetworkMode == "" {
				c.Hostname = spec.Name
			}
			c.User = spec.User
		},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.Privileged = false
			hc.CapAdd = append([]string(nil), spec.CapAdd...)
			if spec.Init {
				t := true
				hc.Init = &t
			}
			if spec.NetworkMode != "" {
				hc.NetworkMode = container.NetworkMode(spec.NetworkMode)
			}
			for _, m := range spec.Mounts {
				hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.HostDir, Target: m.Target, ReadOnly: true})
			}
		},
		LifecycleHooks: []testcontainers.ContainerLifecycleHooks{{
			// Runs right after every (re)start and before the wait strategy, so the log
			// follower sees the output the wait strategy looks for.
			PostStarts: []testcontainers.ContainerHook{func(_ context.Context, c testcontainers.Container) error {
				n.logs.follow(c.GetContainerID())
				return nil
			}},
		}},
	}
	if spec.NetworkMode == "" {
		req.Networks = []string{net.Name}
		req.NetworkAliases = map[string][]string{net.Name: {spec.Name}}
		if addr, ok := net.nextAddr(); ok {
			// Kept across restarts (network.go, nextAddr).
			n.addr = addr
			req.EndpointSettingsModifier = func(eps map[string]*network.EndpointSettings) {
				if ep := eps[net.Name]; ep != nil {
					ep.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: addr}
				}
			}
		}
	}
	for _, f := range spec.Files {
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		req.Files = append(req.Files, testcontainers.ContainerFile{Reader: bytes.NewReader(f.Content), ContainerFilePath: f.Path, FileMode: mode})
	}
	// The create is not cancelled with ctx: the engine can finish a create whose caller gave
	// up, after the lookup by name below, and nobody removes that container (a nemesis
	// sidecar was left so). Once the create has answered, the id is known, the start obeys
	// ctx, and a cancelled start removes the container below.
	cctx, cancelCreate := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	c, err := testcontainers.GenericContainer(cctx, testcontainers.GenericContainerRequest{
		ContainerRequest: req, Started: false, Logger: tclog.NewNoopLogger(),
	})
	cancelCreate()
	if c != nil {
		n.tc = c
		n.id = c.GetContainerID()
	}
	if err == nil {
		err = c.Start(ctx)
	}
	if err != nil {
		if n.id == "" {
			// A create whose answer was lost (an engine that answered after the create's
			// timeout) may still have made the container: find it by its name, so that the
			// removal below leaves nothing of the run behind.
			cctx, cancel := cleanupContext(ctx)
			if res, ierr := e.cli.ContainerInspect(cctx, ContainerName(runID, spec.Name), client.ContainerInspectOptions{}); ierr == nil && res.Container.ID != "" {
				n.id = res.Container.ID
			}
			cancel()
		}
		tail := ""
		if n.id != "" {
			tail = n.logs.tail()
			_ = n.Terminate(ctx)
		} else {
			n.logs.close()
		}
		if tail != "" {
			return nil, fmt.Errorf("start node %s (image %s): %w\nlast log lines:\n%s", spec.Name, spec.Image, err, tail)
		}
		return nil, fmt.Errorf("start node %s (image %s): %w", spec.Name, spec.Image, err)
	}
	return n, nil
}

// Name is the node name (also its network alias).
func (n *Node) Name() string { return n.spec.Name }

// Role is the node's role label.
func (n *Node) Role() string { return n.spec.Role }

// ID is the Docker container id.
func (n *Node) ID() string { return n.id }

// Alias is the DNS name other containers on the run network use.
func (n *Node) Alias() string { return n.spec.Name }

// RunID is the run the node belongs to.
func (n *Node) RunID() string { return n.runID }

// Spec returns the spec the node was started from.
func (n *Node) Spec() NodeSpec { return n.spec }

// LogPath is the node's log file, "" when it has none.
func (n *Node) LogPath() string { return n.logs.path }

func (n *Node) inspect(ctx context.Context) (container.InspectResponse, error) {
	res, err := n.eng.cli.ContainerInspect(ctx, n.id, client.ContainerInspectOptions{})
	if err != nil {
		return container.InspectResponse{}, fmt.Errorf("inspect %s: %w", n.spec.Name, err)
	}
	return res.Container, nil
}

// IP is the node's address on the run network, read fresh each time (restarts may change it).
func (n *Node) IP(ctx context.Context) (string, error) {
	if n.net == nil {
		return "", fmt.Errorf("node %s shares another container's network (%s): ask that node for its IP", n.spec.Name, n.spec.NetworkMode)
	}
	in, err := n.inspect(ctx)
	if err != nil {
		return "", err
	}
	if in.NetworkSettings != nil {
		if ep, ok := in.NetworkSettings.Networks[n.net.Name]; ok && ep != nil && ep.IPAddress.IsValid() {
			return ep.IPAddress.String(), nil
		}
	}
	return "", fmt.Errorf("node %s has no address on network %s (state %s)", n.spec.Name, n.net.Name, in.State.Status)
}

// HostPID is the host PID of the container's PID 1 (docker-init when Init is set). It changes
// on every restart.
func (n *Node) HostPID(ctx context.Context) (int, error) {
	in, err := n.inspect(ctx)
	if err != nil {
		return 0, err
	}
	if in.State == nil || in.State.Pid == 0 {
		return 0, fmt.Errorf("node %s: %w", n.spec.Name, ErrNotRunning)
	}
	return in.State.Pid, nil
}

// Endpoint is where the host reaches a container port of ExposedPorts ("2379" or
// "2379/tcp"): the node's address on the run network, or the published localhost port with
// PublishPorts. Looked up every time: a node that is not running has neither, so a caller
// asking each node in turn skips it at once instead of waiting on a connect.
func (n *Node) Endpoint(ctx context.Context, port string) (string, error) {
	if !strings.Contains(port, "/") {
		port += "/tcp"
	}
	if !slices.ContainsFunc(n.spec.ExposedPorts, func(p string) bool { return p == port || p+"/tcp" == port }) {
		return "", fmt.Errorf("node %s: port %s is not in its ExposedPorts %v: add it to the NodeSpec", n.spec.Name, port, n.spec.ExposedPorts)
	}
	if n.spec.PublishPorts {
		ep, err := n.tc.PortEndpoint(ctx, port, "")
		if err != nil {
			return "", fmt.Errorf("node %s: host endpoint of port %s: %w (is the node running?)", n.spec.Name, port, err)
		}
		return ep, nil
	}
	ip, err := n.IP(ctx)
	if err != nil {
		return "", fmt.Errorf("node %s: endpoint of port %s: %w", n.spec.Name, port, err)
	}
	num, _, _ := strings.Cut(port, "/")
	return net.JoinHostPort(ip, num), nil
}

// Exec runs cmd in the node and returns its exit code and combined output. A frozen node
// refuses exec (Docker's rule); thaw it first.
func (n *Node) Exec(ctx context.Context, cmd []string) (int, string, error) {
	code, r, err := n.tc.Exec(ctx, cmd, tcexec.Multiplexed())
	if err != nil {
		return code, "", fmt.Errorf("exec %q in %s: %w", strings.Join(cmd, " "), n.spec.Name, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return code, string(out), fmt.Errorf("exec %q in %s: read output: %w", strings.Join(cmd, " "), n.spec.Name, err)
	}
	return code, string(out), nil
}

// Stop stops the node gracefully (SIGTERM, then SIGKILL after timeout).
func (n *Node) Stop(ctx context.Context, timeout time.Duration) error {
	secs := int(timeout.Round(time.Second) / time.Second)
	if _, err := n.eng.cli.ContainerStop(ctx, n.id, client.ContainerStopOptions{Timeout: &secs}); err != nil {
		return fmt.Errorf("stop %s: %w", n.spec.Name, err)
	}
	n.logs.waitIdle(ctx)
	return nil
}

// Start starts a stopped node again and waits for its wait strategy.
func (n *Node) Start(ctx context.Context) error {
	// The previous follower must have drained, else lines could be emitted out of order.
	n.logs.waitIdle(ctx)
	if err := n.tc.Start(ctx); err != nil {
		return fmt.Errorf("start %s: %w", n.spec.Name, err)
	}
	return nil
}

// Restart stops (SIGTERM, 5 s grace) and starts the node.
func (n *Node) Restart(ctx context.Context) error {
	if err := n.Stop(ctx, 5*time.Second); err != nil {
		return err
	}
	return n.Start(ctx)
}

// Kill sends any signal ("SIGKILL", "SIGSTOP", "SIGCONT", "TERM", "9") to the container's
// PID 1 from outside, so even signals PID 1 does not handle are delivered for STOP/KILL.
func (n *Node) Kill(ctx context.Context, signal string) error {
	if _, err := n.eng.cli.ContainerKill(ctx, n.id, client.ContainerKillOptions{Signal: signal}); err != nil {
		return fmt.Errorf("kill -%s %s: %w", signal, n.spec.Name, err)
	}
	return nil
}

// Freeze suspends every process of the node (docker pause, cgroup freezer).
func (n *Node) Freeze(ctx context.Context) error {
	if _, err := n.eng.cli.ContainerPause(ctx, n.id, client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("freeze %s: %w", n.spec.Name, err)
	}
	return nil
}

// Thaw resumes a frozen node; thawing a node that is not frozen is not an error.
func (n *Node) Thaw(ctx context.Context) error {
	if _, err := n.eng.cli.ContainerUnpause(ctx, n.id, client.ContainerUnpauseOptions{}); err != nil {
		if st, serr := n.State(ctx); serr == nil && st.Status != StatusPaused {
			return nil
		}
		return fmt.Errorf("thaw %s: %w", n.spec.Name, err)
	}
	return nil
}

// Container states as Docker reports them.
const (
	StatusRunning = "running"
	StatusPaused  = "paused"
	StatusExited  = "exited"
	StatusCreated = "created"
)

// State is a node's Docker state. Docker still says "running" for a SIGSTOPped process.
type State struct {
	Status   string // running, paused, exited, created, restarting, dead
	Running  bool
	Paused   bool
	Pid      int // host PID of PID 1, 0 when not running
	ExitCode int
	// StartedAt and FinishedAt are the engine's wall-clock times of the last start and
	// exit (zero when unknown); FinishedAt is the exit time containerd reported.
	StartedAt, FinishedAt time.Time
}

// State reads the node's current state.
func (n *Node) State(ctx context.Context) (State, error) {
	in, err := n.inspect(ctx)
	if err != nil {
		return State{}, err
	}
	if in.State == nil {
		return State{}, fmt.Errorf("inspect %s: no state", n.spec.Name)
	}
	st := State{Status: string(in.State.Status), Running: in.State.Running, Paused: in.State.Paused, Pid: in.State.Pid, ExitCode: in.State.ExitCode}
	st.StartedAt, _ = time.Parse(time.RFC3339Nano, in.State.StartedAt)
	st.FinishedAt, _ = time.Parse(time.RFC3339Nano, in.State.FinishedAt)
	if st.FinishedAt.Year() < 2000 {
		st.FinishedAt = time.Time{} // the engine's "0001-01-01T00:00:00Z" for never
	}
	return st, nil
}

// CopyFile writes one file into the node (running or not) through the copy-to-container API,
// so it works on FROM scratch images without a shell. Parent directories must exist.
func (n *Node) CopyFile(ctx context.Context, filePath string, content []byte, mode int64) error {
	if !path.IsAbs(filePath) {
		return fmt.Errorf("copy to %s: path %q must be absolute", n.spec.Name, filePath)
	}
	if mode == 0 {
		mode = 0o644
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: path.Base(filePath), Mode: mode, Size: int64(len(content)), ModTime: time.Now(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(content); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	_, err := n.eng.cli.CopyToContainer(ctx, n.id, client.CopyToContainerOptions{DestinationPath: path.Dir(filePath), Content: &buf})
	if err != nil {
		return fmt.Errorf("copy %s into %s: %w", filePath, n.spec.Name, err)
	}
	return nil
}

// Terminate removes the node for good. It thaws first (on cgroup v1 a SIGKILL to a frozen
// task waits for a thaw that would never come) and works on a cancelled ctx.
func (n *Node) Terminate(ctx context.Context) error {
	n.mu.Lock()
	if n.terminated {
		n.mu.Unlock()
		return nil
	}
	n.terminated = true
	n.mu.Unlock()
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	var err error
	if n.id != "" {
		err = removeContainer(cctx, n.eng.cli, n.id)
	}
	n.logs.waitIdle(cctx)
	n.logs.close()
	if err != nil {
		// Not removed: a later Terminate (a sweep) tries again.
		n.mu.Lock()
		n.terminated = false
		n.mu.Unlock()
		return fmt.Errorf("terminate %s: %w", n.spec.Name, err)
	}
	n.net.releaseAddr(n.addr)
	return nil
}

// removeContainer thaws (if frozen), then force-removes a container; gone already is fine.
func removeContainer(ctx context.Context, cli *client.Client, id string) error {
	if res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil && res.Container.State != nil && res.Container.State.Paused {
		if _, err := cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("thaw before removal: %w", err)
		}
	}
	if _, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}
