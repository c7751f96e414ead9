package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// fakeEnv is a run without containers. Its nodes record every call, so real kinds' apply
// and heal bookkeeping is tested without Docker; pause stops real host processes (pid).
type fakeEnv struct {
	t       *testing.T
	mu      sync.Mutex
	events  []history.Event
	leaders []Leader
	cands   []*fakeNode
	store   []*fakeNode
	kind    string
	// sidecars started and terminated, by target
	sidecarsStarted, sidecarsRemoved []string
	// sidecarStarting, when set, runs inside StartSidecar before the sidecar exists; an
	// error fails the start (as a cancelled create does).
	sidecarStarting func(ctx context.Context, target string) error
}

func newFakeEnv(t *testing.T, cands, store []string) *fakeEnv {
	e := &fakeEnv{t: t, kind: "etcd"}
	for i, c := range cands {
		e.cands = append(e.cands, newFakeNode(c, fmt.Sprintf("10.0.0.%d", i+10)))
	}
	for i, s := range store {
		e.store = append(e.store, newFakeNode(s, fmt.Sprintf("10.0.1.%d", i+10)))
	}
	return e
}

func (e *fakeEnv) Candidates() []Node { return asNodes(e.cands) }
func (e *fakeEnv) StoreNodes() []Node { return asNodes(e.store) }
func (e *fakeEnv) StoreKind() string  { return e.kind }
func (e *fakeEnv) Leaders() []Leader {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.leaders)
}
func (e *fakeEnv) StoreLeader(context.Context) (string, error) {
	return "", errors.New("no leader")
}
func (e *fakeEnv) StartSidecar(ctx context.Context, target Node) (Sidecar, error) {
	fn := target.(*fakeNode)
	if e.sidecarStarting != nil {
		if err := e.sidecarStarting(ctx, fn.name); err != nil {
			return nil, err
		}
	}
	e.mu.Lock()
	e.sidecarsStarted = append(e.sidecarsStarted, fn.name)
	e.mu.Unlock()
	return &fakeSidecar{env: e, target: fn}, nil
}
func (e *fakeEnv) Record(ev history.Event) error {
	ev.V = history.Version
	if err := ev.Validate(); err != nil {
		if e.t != nil {
			e.t.Errorf("invalid event from the nemesis: %v", err)
		}
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
	return nil
}

func (e *fakeEnv) eventsOf(kind history.Kind) []history.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []history.Event
	for _, ev := range e.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

func (e *fakeEnv) node(name string) *fakeNode {
	for _, n := range append(slices.Clone(e.cands), e.store...) {
		if n.name == name {
			return n
		}
	}
	e.t.Fatalf("no fake node %s", name)
	return nil
}

func (e *fakeEnv) topo() Topology {
	t := Topology{StoreKind: e.kind, TTL: 100_000_000}
	for _, c := range e.cands {
		t.Candidates = append(t.Candidates, c.name)
	}
	for _, s := range e.store {
		t.StoreNodes = append(t.StoreNodes, s.name)
	}
	return t
}

func asNodes(in []*fakeNode) []Node {
	out := make([]Node, len(in))
	for i, n := range in {
		out[i] = n
	}
	return out
}

// fakeNode records calls and keeps the state a container would have. Its network
// namespace is a tiny iptables emulation the sidecar scripts run against.
type fakeNode struct {
	name, ip string
	pid      int // host PID reported (a real process for pause tests), 0 = none

	mu      sync.Mutex
	calls   []string
	running bool
	paused  bool
	files   map[string]string
	rules   []string // iptables -S lines of the namespace, in order
	fail    string   // a method name that fails
	// dieInRemoval kills the node while a sidecar runs a rule-removal script (exit 137),
	// as when a kill fault lands on a node during a partition's heal.
	dieInRemoval bool

	stuckFreezes int // how many Freeze calls fail as runc does on a freezer stuck in FREEZING

	killedAt   int64         // when the last Kill took effect
	killReturn time.Duration // how long Kill takes to return after that (Docker's kill waits for the exit)

	startedAt  int64         // when the last Start took effect
	startCheck time.Duration // how long the State call after a Start takes (the engine's inspect)
}

func newFakeNode(name, ip string) *fakeNode {
	return &fakeNode{name: name, ip: ip, running: true, files: map[string]string{}}
}

func (n *fakeNode) call(c string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, c)
	if n.fail != "" && strings.HasPrefix(c, n.fail) {
		return fmt.Errorf("fake %s: %s fails", n.name, n.fail)
	}
	return nil
}

func (n *fakeNode) callList() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.calls)
}

func (n *fakeNode) Name() string { return n.name }
func (n *fakeNode) ID() string   { return "fake-" + n.name + "-0123456789ab" }
func (n *fakeNode) HostPID(context.Context) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running || n.pid == 0 {
		return 0, fmt.Errorf("%s has no host pid", n.name)
	}
	return n.pid, nil
}
func (n *fakeNode) IP(context.Context) (string, error) { return n.ip, nil }
func (n *fakeNode) State(context.Context) (NodeState, error) {
	n.mu.Lock()
	if n.startCheck > 0 && n.startedAt > 0 {
		d := n.startCheck
		n.startCheck = 0
		n.mu.Unlock()
		// sleep: stands in for a slow inspect of the engine after a start; nothing to wait for.
		time.Sleep(d)
		n.mu.Lock()
	}
	defer n.mu.Unlock()
	st := NodeState{Running: n.running, Paused: n.paused, Status: "exited"}
	switch {
	case n.paused:
		st.Status = "paused"
	case n.running:
		st.Status = "running"
	}
	return st, nil
}
func (n *fakeNode) Kill(_ context.Context, sig string) error {
	if err := n.call("kill " + sig); err != nil {
		return err
	}
	n.mu.Lock()
	n.running, n.rules = false, nil // a dead container's namespace is gone
	n.killedAt = history.Now()
	wait := n.killReturn
	n.mu.Unlock()
	// sleep: models the engine's kill, which returns only after the process exited; a fault
	// stamped after Kill returned then reads visibly later than killedAt, even on a coarse
	// clock. No test step waits on it.
	time.Sleep(wait)
	return nil
}
func (n *fakeNode) Start(context.Context) error {
	if err := n.call("start"); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.running = true
	n.startedAt = history.Now()
	return nil
}
func (n *fakeNode) Freeze(context.Context) error {
	if err := n.call("freeze"); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stuckFreezes > 0 {
		n.stuckFreezes--
		return fmt.Errorf("Error response from daemon: Cannot pause container %s: OCI runtime pause failed: unable to freeze: unknown", n.ID())
	}
	n.paused = true
	return nil
}
func (n *fakeNode) Thaw(context.Context) error {
	if err := n.call("thaw"); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.paused = false
	return nil
}
func (n *fakeNode) Exec(_ context.Context, cmd []string) (int, string, error) {
	if err := n.call("exec " + strings.Join(cmd, " ")); err != nil {
		return 1, "", err
	}
	// The renames of writeFileAtomic: mv -f FROM TO, or the splitbrain binary's rename.
	if len(cmd) == 4 && (cmd[0] == "mv" || cmd[1] == "rename") {
		n.mu.Lock()
		defer n.mu.Unlock()
		from, to := cmd[2], cmd[3]
		if _, ok := n.files[from]; !ok {
			return 1, "no such file " + from, nil
		}
		n.files[to] = n.files[from]
		delete(n.files, from)
	}
	return 0, "", nil
}
func (n *fakeNode) CopyFile(_ context.Context, path string, content []byte, _ int64) error {
	if err := n.call("copy " + path); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.files[path] = string(content)
	return nil
}

func (n *fakeNode) file(path string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.files[path]
}

func (n *fakeNode) ruleList() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.rules)
}

// fakeSidecar runs the nemesis's iptables scripts against its target's emulated table.
type fakeSidecar struct {
	env    *fakeEnv
	target *fakeNode
}

func (s *fakeSidecar) Exec(_ context.Context, cmd []string) (int, string, error) {
	if len(cmd) != 3 || cmd[0] != "sh" || cmd[1] != "-c" {
		return 1, "", fmt.Errorf("fake sidecar runs sh -c scripts only, got %q", cmd)
	}
	s.target.mu.Lock()
	defer s.target.mu.Unlock()
	if !s.target.running {
		return 1, "", fmt.Errorf("fake sidecar: %s is not running", s.target.name)
	}
	if s.target.dieInRemoval && strings.Contains(cmd[2], " -D ") {
		s.target.running, s.target.rules = false, nil
		return 137, "", nil
	}
	out, code := emulateIptables(&s.target.rules, cmd[2])
	return code, out, nil
}

func (s *fakeSidecar) Terminate(context.Context) error {
	s.env.mu.Lock()
	defer s.env.mu.Unlock()
	s.env.sidecarsRemoved = append(s.env.sidecarsRemoved, s.target.name)
	return nil
}

// emulateIptables interprets the few iptables forms the scripts of iptables.go use:
// -N/-F/-X chains, -C/-I hooks, -A/-D rules (under while loops) and -S listings.
func emulateIptables(rules *[]string, script string) (string, int) {
	var out strings.Builder
	has := func(line string) bool { return slices.Contains(*rules, line) }
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line == "set -e" {
			continue
		}
		line = strings.TrimPrefix(line, "while ")
		line = strings.TrimSuffix(line, "; do :; done")
		first, alt, _ := strings.Cut(line, " || ")
		first = strings.ReplaceAll(first, " 2>/dev/null", "")
		f := strings.Fields(strings.TrimPrefix(first, ipt+" "))
		if len(f) == 0 {
			return "unparsed: " + line, 2
		}
		op, rest := f[0], strings.Join(f[1:], " ")
		switch op {
		case "-S":
			out.WriteString("-P INPUT ACCEPT\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n")
			for _, r := range *rules {
				out.WriteString(r + "\n")
			}
		case "-N":
			if !has("-N " + rest) {
				*rules = append(*rules, "-N "+rest)
			}
		case "-C":
			if !has("-A "+rest) && strings.Contains(alt, " -I ") {
				g := strings.Fields(strings.TrimPrefix(alt, ipt+" "))
				// -I HOOK 1 -j CHAIN: insert at the hook's head (order does not matter here)
				*rules = append(*rules, "-A "+g[1]+" "+strings.Join(g[3:], " "))
			}
		case "-A":
			*rules = append(*rules, "-A "+rest)
		case "-D":
			*rules = slices.DeleteFunc(*rules, func(r string) bool { return r == "-A "+rest })
		case "-F":
			*rules = slices.DeleteFunc(*rules, func(r string) bool { return strings.HasPrefix(r, "-A "+rest+" ") })
		case "-X":
			*rules = slices.DeleteFunc(*rules, func(r string) bool { return r == "-N "+rest })
		default:
			return "unknown iptables op " + op, 2
		}
	}
	return out.String(), 0
}

// faultEvents is the history without the schedule's fault-planned entries.
func (e *fakeEnv) faultEvents() []history.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []history.Event
	for _, ev := range e.events {
		if ev.Kind != history.KindFaultPlanned {
			out = append(out, ev)
		}
	}
	return out
}
