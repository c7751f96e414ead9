//go:build chaos

package candidates_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/libraries"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/boundtest"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/workloads/resource"
)

// The test binary doubles as the candidate process: real processes get real SIGTERM/SIGKILL.
const envChildRecipe = "SPLITBRAIN_TEST_CANDIDATE_RECIPE"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == candidates.SidecarCommand {
		// k8s-sidecar's application starts its own executable as the sidecar.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := candidates.RunLeaseSidecar(ctx, os.LookupEnv, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(64)
		}
		os.Exit(0)
	}
	if r := os.Getenv(envChildRecipe); r != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := runtime.Run(ctx, runtime.Options{Recipes: candidates.Registry, Recipe: r}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(64)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// launchStore starts a store cluster and returns host-reachable endpoints; cleanup removes
// everything of the run and asserts nothing is left.
func launchStore(t *testing.T, kind stores.Kind, nodes int) []string {
	t.Helper()
	run := platformtest.NewRun(t, 5*time.Minute)
	cl := run.LaunchStore(t, stores.Options{Kind: kind, Nodes: nodes, LogDir: t.TempDir()})
	eps, err := cl.HostEndpoints(run.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s x%d %s ready in %v at %v", kind, len(cl.Nodes()), cl.Version(), cl.ReadyDuration(), eps)
	if cr, ok := cl.(stores.Credentialed); ok {
		credentialed.Store(strings.Join(eps, ","), cr)
	}
	if ph, ok := cl.(stores.PodHost); ok {
		podHosts.Store(strings.Join(eps, ","), ph)
	}
	return eps
}

// podHosts holds the clusters whose candidates live in Pods (kubernetes), by endpoint list:
// a group on those endpoints plays the node as the harness does (docs/stores.md).
var podHosts sync.Map

// credentialed holds the clusters that issue candidate credentials (kubernetes), by their
// endpoint list, so a group on those endpoints can give each candidate its own.
var credentialed sync.Map

// group runs candidate processes against one resource and records what they print.
type group struct {
	t        *testing.T
	cfg      contract.Config
	command  func() *exec.Cmd
	res      *resource.Server
	resLog   *lockedBuf
	srv      *httptest.Server
	mu       sync.Mutex
	events   []history.Event
	leading  map[string]int64 // node -> token while it believes it leads
	overlaps []string
	// suspects: an election that came while another node still led, as read. Two
	// candidates' pipes are read independently, so the other's stepped-down can be read
	// after it although stamped before; such a suspect is cleared when it is.
	suspects []suspect
	procs    map[string]*proc
	elected  chan history.Event
	ports    map[string]int // peer port per node (store "none")
	creds    stores.Credentialed
	pods     stores.PodHost
	keepPod  map[string]bool // nodes whose Pod outlives their process (a node that does not report)
	tmp      string          // TMPDIR of peer candidates (their persisted state)
}

type suspect struct {
	t      int64 // the election's stamp
	leader string
	msg    string
}

// violations are the contract errors and the belief overlaps that no later-read
// stepped-down explained. Call with g.mu held.
func (g *group) violations() []string {
	out := append([]string(nil), g.overlaps...)
	for _, su := range g.suspects {
		out = append(out, su.msg)
	}
	return out
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type proc struct {
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *lockedBuf
}

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func newGroup(t *testing.T, store string, eps []string, election string, command func() *exec.Cmd) *group {
	g := &group{t: t, command: command, resLog: &lockedBuf{}, leading: map[string]int64{},
		procs: map[string]*proc{}, elected: make(chan history.Event, 64), keepPod: map[string]bool{}}
	g.res = resource.New(resource.Fenced, g.resLog)
	g.srv = httptest.NewServer(g.res.Handler())
	g.cfg = contract.Config{Store: store, Endpoints: eps, ResourceURL: g.srv.URL, LeaseTTL: 2 * time.Second,
		WriteInterval: 50 * time.Millisecond, ClockFile: filepath.Join(t.TempDir(), "clock"), ElectionName: election}
	g.cfg.FenceURL = startHostFence(t, g)
	if cr, ok := credentialed.Load(strings.Join(eps, ",")); ok {
		g.creds = cr.(stores.Credentialed)
	}
	if ph, ok := podHosts.Load(strings.Join(eps, ",")); ok {
		g.pods = ph.(stores.PodHost)
	}
	if store == storekinds.None {
		// Peers on one machine: id=127.0.0.1:port, a free port each; a restarted node keeps
		// its port and its state directory (TMPDIR), as a restarted container would.
		g.ports = map[string]int{}
		g.tmp = t.TempDir()
		for _, n := range []string{"c1", "c2", "c3"} {
			g.ports[n] = freePort(t)
			g.cfg.Peers = append(g.cfg.Peers, fmt.Sprintf("%s=127.0.0.1:%d", n, g.ports[n]))
		}
	}
	t.Cleanup(func() {
		g.stopAll()
		g.srv.Close()
		if t.Failed() {
			for n, p := range g.procs {
				t.Logf("--- %s stderr:\n%s", n, p.stderr.String())
			}
			var beliefs []string
			g.mu.Lock()
			for _, e := range g.events {
				if e.Kind == history.KindElected || e.Kind == history.KindSteppedDown {
					at := time.Duration(e.T - g.events[0].T).Round(time.Millisecond)
					beliefs = append(beliefs, fmt.Sprintf("+%v %s %s token %d %s", at, e.Node, e.Kind, e.Token, e.Reason))
				}
			}
			g.mu.Unlock()
			t.Logf("--- elected and stepped-down events:\n%s", strings.Join(beliefs, "\n"))
		}
	})
	return g
}

func (g *group) start(node string) {
	g.t.Helper()
	cfg := g.cfg
	cfg.NodeID = node
	cfg.ListenPort = g.ports[node]
	if g.creds != nil {
		cred, err := g.creds.Credentials(node, cfg.Endpoints)
		if err != nil {
			g.t.Fatal(err)
		}
		cfg.StoreUser, cfg.Kubeconfig = cred.User, filepath.Join(g.t.TempDir(), node+".kubeconfig")
		if err := os.WriteFile(cfg.Kubeconfig, cred.Kubeconfig, 0o600); err != nil {
			g.t.Fatal(err)
		}
	}
	// The node's part: a new Pod before the process starts, deleted when it has exited.
	var podUID string
	if g.pods != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		uid, err := g.pods.CreatePod(ctx, node)
		cancel()
		if err != nil {
			g.t.Fatal(err)
		}
		podUID, cfg.PodName = uid, g.pods.PodName(node)
	}
	cmd := g.command()
	cmd.Env = append(append(os.Environ(), cmd.Env...), cfg.Environ()...)
	if g.tmp != "" {
		cmd.Env = append(cmd.Env, "TMPDIR="+g.tmp)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		g.t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), stderr: &lockedBuf{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		g.t.Fatalf("start %s: %v", node, err)
	}
	g.mu.Lock()
	g.procs[node] = p
	g.mu.Unlock()
	go func() {
		defer close(p.done)
		g.read(node, stdout)
		cmd.Wait()
		g.mu.Lock()
		delete(g.leading, node) // a dead process believes nothing
		g.mu.Unlock()
		g.mu.Lock()
		keep := g.keepPod[node]
		g.mu.Unlock()
		if g.pods != nil && !keep {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			if err := g.pods.DeletePod(ctx, node, podUID); err != nil {
				g.t.Errorf("delete pod of %s: %v", node, err)
			}
			cancel()
		}
	}()
}

func (g *group) read(node string, r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		p, err := contract.ParseLine(node, sc.Bytes(), history.Now())
		if errors.Is(err, contract.ErrNotEvent) {
			continue
		}
		g.mu.Lock()
		if err != nil {
			g.overlaps = append(g.overlaps, fmt.Sprintf("%s: %v: %s", node, err, sc.Text()))
			g.mu.Unlock()
			continue
		}
		e := p.Event
		g.events = append(g.events, e)
		switch e.Kind {
		case history.KindElected:
			for other, tok := range g.leading {
				g.suspects = append(g.suspects, suspect{t: e.T, leader: other, msg: fmt.Sprintf("%s elected with token %d while %s still leads with %d", node, e.Token, other, tok)})
			}
			g.leading[node] = e.Token
		case history.KindSteppedDown:
			delete(g.leading, node)
			g.suspects = slices.DeleteFunc(g.suspects, func(su suspect) bool { return su.leader == node && e.T <= su.t })
		}
		g.mu.Unlock()
		if e.Kind == history.KindElected {
			g.elected <- e
		}
	}
}

// settle drains the elected notices and returns the latest election of a node that still
// leads (cur when nothing changed).
func (g *group) settle(cur history.Event) history.Event {
	for {
		select {
		case e := <-g.elected:
			g.mu.Lock()
			tok, leads := g.leading[e.Node]
			g.mu.Unlock()
			if leads && tok == e.Token {
				cur = e
			}
		default:
			return cur
		}
	}
}

func (g *group) waitElected(timeout time.Duration, not string) history.Event {
	g.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e := <-g.elected:
			if e.Node != not {
				return e
			}
		case <-deadline:
			g.t.Fatalf("no new leader (other than %q) within %v", not, timeout)
		}
	}
}

func (g *group) signal(node string, sig syscall.Signal) (sentAt int64) {
	g.t.Helper()
	g.mu.Lock()
	p := g.procs[node]
	if sig == syscall.SIGKILL {
		delete(g.leading, node) // a killed process's belief ends with it
	}
	g.mu.Unlock()
	sentAt = history.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		g.t.Fatalf("signal %s: %v", node, err)
	}
	return sentAt
}

// stepDownAfter is how long after t node printed stepped-down (-1 if it did not).
func (g *group) stepDownAfter(node string, t int64) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range g.events {
		if e.Node == node && e.Kind == history.KindSteppedDown && e.T >= t {
			return time.Duration(e.T - t)
		}
	}
	return -1
}

func (g *group) waitExit(node string, within time.Duration) int {
	g.t.Helper()
	p := g.procs[node]
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		g.t.Fatalf("%s did not exit within %v", node, within)
		return -1
	}
}

func (g *group) stopAll() {
	for _, p := range g.procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range g.procs {
		select {
		case <-p.done:
		case <-time.After(runtime.ShutdownBound + 2*time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// checkResource: fencing held and every token's accepted writes came from one node.
func (g *group) checkResource() {
	g.t.Helper()
	st := g.res.State()
	if st.StaleAccepted != 0 || st.BadRequests != 0 {
		g.t.Errorf("resource state %+v: stale writes accepted or bad requests", st)
	}
	writer := map[int64]string{}
	for _, line := range strings.Split(strings.TrimSpace(g.resLog.String()), "\n") {
		e, err := resource.ParseLine([]byte(line))
		if err != nil {
			g.t.Fatal(err)
		}
		if e.Result != history.ResultAccepted {
			continue
		}
		if w, ok := writer[e.Token]; ok && w != e.Node {
			g.t.Errorf("token %d accepted from both %s and %s: two leaders by the resource's record", e.Token, w, e.Node)
		}
		writer[e.Token] = e.Node
	}
}

// stable waits, in 500 ms steps, until one node alone believes it leads and has at least
// writes accepted under its token, and returns that leader's election. The minute's deadline
// only ends a test whose recipe never settles.
func (g *group) stable(cur history.Event, writes int) history.Event {
	g.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		time.Sleep(500 * time.Millisecond)
		cur = g.settle(cur)
		g.mu.Lock()
		believers := len(g.leading)
		g.mu.Unlock()
		n := g.acceptedFrom(cur.Node, cur.Token)
		if n >= writes && believers == 1 {
			return cur
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("no stable leader within a minute: %s (token %d) has %d accepted writes (want >= %d) and %d nodes believe they lead (want 1)",
				cur.Node, cur.Token, n, writes, believers)
		}
	}
}

// quietAfterRestart waits, for a node restarted at since, for its campaigning event and then
// for quiet more: a restarted store-less node that hears no heartbeat within its failure
// timeout elects itself (under load it may not hear one), and that claim must come before
// the next fault, not be taken for that fault's failover.
func (g *group) quietAfterRestart(node string, since int64, quiet time.Duration) {
	g.t.Helper()
	if quiet == 0 {
		return
	}
	var campaigning int64
	for deadline := time.Now().Add(time.Minute); campaigning == 0; time.Sleep(20 * time.Millisecond) {
		g.mu.Lock()
		for _, e := range g.events {
			if e.Node == node && e.Kind == history.KindCampaigning && e.T >= since {
				campaigning = e.T
				break
			}
		}
		g.mu.Unlock()
		if campaigning == 0 && time.Now().After(deadline) {
			g.t.Fatalf("restarted %s did not campaign within a minute", node)
		}
	}
	// sleep: a follower emits nothing (the contract has no event for "heard the leader"),
	// so quiet, the failure timeout counted from the node's campaigning, is when it has
	// either heard the leader or started its own election.
	time.Sleep(time.Duration(campaigning + int64(quiet) - history.Now()))
}

// waitAccepted waits until node has at least n writes accepted under token and returns the
// count; the minute's deadline only ends a hung test.
func (g *group) waitAccepted(node string, token int64, n int) int {
	g.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		got := g.acceptedFrom(node, token)
		if got >= n {
			return got
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("%s has %d writes accepted under token %d after a minute, want %d", node, got, token, n)
			return got
		}
	}
}

// waitAcceptedAt waits until node has a write accepted under token that the resource
// stamped at or after t (history.Now), a tenure seen to last until t; the minute's deadline
// only ends a hung test.
func (g *group) waitAcceptedAt(node string, token int64, t int64) {
	g.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		for _, line := range strings.Split(g.resLog.String(), "\n") {
			if e, err := resource.ParseLine([]byte(line)); err == nil && e.Node == node && e.Token == token && e.Result == history.ResultAccepted && e.T >= t {
				return
			}
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("%s has no write accepted under token %d stamped at or after the point %v before now, a minute on", node, token, time.Duration(history.Now()-t))
		}
	}
}

func (g *group) acceptedFrom(node string, token int64) int {
	n := 0
	for _, line := range strings.Split(g.resLog.String(), "\n") {
		if e, err := resource.ParseLine([]byte(line)); err == nil && e.Node == node && e.Token == token && e.Result == history.ResultAccepted {
			n++
		}
	}
	return n
}

// acceptedAny counts the resource's accepted writes, whoever wrote them.
func (g *group) acceptedAny() int {
	n := 0
	for _, line := range strings.Split(g.resLog.String(), "\n") {
		if e, err := resource.ParseLine([]byte(line)); err == nil && e.Result == history.ResultAccepted {
			n++
		}
	}
	return n
}

func selfCommand(recipe string) func() *exec.Cmd {
	return func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(cmd.Env, envChildRecipe+"="+recipe)
		return cmd
	}
}

// rounds of handoff + crash per recipe; -rounds=10 gives the figures for docs/performance.md.
var rounds = flag.Int("rounds", 1, "graceful handoffs and crash failovers per recipe")

// exercise: no-fault election, then rounds of graceful handoff (SIGTERM) and crash failover
// (SIGKILL), each followed by a restart of the stopped node so three candidates remain.
func exercise(t *testing.T, g *group, def runtime.Definition, strict bool) {
	spec := def.Describe()
	tm := def.TimingFor(g.cfg)
	t.Logf("%s timing: %+v", spec.Name, tm)
	for _, n := range []string{"c1", "c2", "c3"} {
		g.start(n)
	}
	cur := g.waitElected(30*time.Second, "")
	// Store-less recipes may re-elect while the staggered starts join (ring did: c3 at
	// epochs 1 and 2, then c2 at 3, within 80 ms; under load c2 and c3 both at 5 for a
	// moment), so the rounds start once one node alone leads and has written.
	cur = g.stable(cur, 3)
	// A restarted store-less node has heard the leader or started an election within its
	// failure timeout (TTL), checked every heartbeat (Renew).
	var restartQuiet time.Duration
	if len(g.cfg.Peers) > 0 {
		restartQuiet = tm.TTL + tm.Renew
	}
	var handoffs, failovers []time.Duration
	for r := 0; r < *rounds; r++ {
		// Graceful handoff.
		sent := g.signal(cur.Node, syscall.SIGTERM)
		next := g.waitElected(boundtest.Wait(tm.HandoffBound)+2*time.Second, cur.Node)
		d := time.Duration(next.T - sent)
		handoffs = append(handoffs, d)
		if testing.Verbose() {
			t.Logf("handoff %s -> %s: %v (old leader stepped down after %v)", cur.Node, next.Node, d, g.stepDownAfter(cur.Node, sent))
		}
		boundtest.Check(t, fmt.Sprintf("graceful handoff %s -> %s", cur.Node, next.Node), d, tm.HandoffBound)
		if next.Token <= cur.Token {
			t.Errorf("token did not grow: %d after %d", next.Token, cur.Token)
		}
		if code := g.waitExit(cur.Node, runtime.ShutdownBound+time.Second); code != 0 {
			t.Errorf("%s exited %d after SIGTERM, want 0", cur.Node, code)
		}
		restarted := history.Now()
		g.start(cur.Node)
		g.quietAfterRestart(cur.Node, restarted, restartQuiet)
		// A restarted higher-ranked node may take over (bully does, by design): the crash
		// goes to whoever leads now.
		next = g.stable(next, 1)

		// Crash failover.
		sent = g.signal(next.Node, syscall.SIGKILL)
		third := g.waitElected(boundtest.Wait(tm.FailoverBound)+5*time.Second, next.Node)
		d = time.Duration(third.T - sent)
		failovers = append(failovers, d)
		boundtest.Check(t, fmt.Sprintf("crash failover %s -> %s", next.Node, third.Node), d, tm.FailoverBound)
		if third.Token <= next.Token {
			t.Errorf("token did not grow: %d after %d", third.Token, next.Token)
		}
		g.waitExit(next.Node, time.Minute)
		third = g.stable(third, 2) // the survivors may re-elect once more (ring does under load)
		restarted = history.Now()
		g.start(next.Node)
		g.quietAfterRestart(next.Node, restarted, restartQuiet)
		cur = g.stable(third, 1)
	}
	t.Logf("%s over %d rounds: handoff median %v max %v (bound %v); crash failover median %v max %v (bound %v)",
		t.Name(), *rounds, median(handoffs), slices.Max(handoffs), tm.HandoffBound,
		median(failovers), slices.Max(failovers), tm.FailoverBound)
	g.stopAll()
	g.checkResource()
	g.mu.Lock()
	defer g.mu.Unlock()
	if v := g.violations(); strict && len(v) > 0 {
		t.Errorf("belief overlaps or contract violations without faults:\n%s", strings.Join(v, "\n"))
	}
	steps := 0
	for _, e := range g.events {
		if e.Kind == history.KindSteppedDown && e.Reason == contract.ReasonSIGTERM {
			steps++
		}
	}
	if steps < *rounds {
		t.Errorf("%d stepped-down(sigterm) events, want >= %d", steps, *rounds)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func runRecipe(t *testing.T, def runtime.Definition, eps []string, strict bool) {
	spec := def.Describe()
	g := newGroup(t, spec.Store, eps, "t-"+spec.Name, selfCommand(spec.Name))
	exercise(t, g, def, strict)
	checkSteps(t, g, spec)
}

// checkSteps: every step a recipe declares is printed, by the candidate that is elected
// next, before its elected event (a trigger on it can then fire in the candidate's window).
func checkSteps(t *testing.T, g *group, spec runtime.Info) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, step := range spec.Steps {
		if step == runtime.StepLeaderWork {
			// The runtime's own step comes while a leader leads, after its elected event:
			// it must follow an elected event of the same node with no step-down between.
			if !leaderWorkAfterElected(g.events) {
				t.Errorf("%s: no %s step from a leader after its elected event", spec.Name, step)
			}
			continue
		}
		seen := false
		for i, e := range g.events {
			if e.Kind != history.KindStep || e.Name != step {
				continue
			}
			for _, later := range g.events[i+1:] {
				if later.Node == e.Node && later.Kind == history.KindElected {
					seen = true
					break
				}
				if later.Node == e.Node && later.Kind != history.KindStep {
					break // a failed campaign: look at the next one
				}
			}
			if seen {
				break
			}
		}
		if !seen {
			t.Errorf("%s declares step %q but never printed it right before an elected event", spec.Name, step)
		}
	}
	for _, e := range g.events {
		if e.Kind == history.KindStep && !slices.Contains(spec.Steps, e.Name) {
			t.Errorf("%s printed step %q, which it does not declare (Steps: %v)", spec.Name, e.Name, spec.Steps)
		}
	}
}

// leaderWorkAfterElected: some leader printed the leader-work step during its tenure.
func leaderWorkAfterElected(events []history.Event) bool {
	leading := map[string]bool{}
	for _, e := range events {
		switch {
		case e.Kind == history.KindElected:
			leading[e.Node] = true
		case e.Kind == history.KindSteppedDown:
			leading[e.Node] = false
		case e.Kind == history.KindStep && e.Name == runtime.StepLeaderWork && leading[e.Node]:
			return true
		}
	}
	return false
}

// runControl runs a negative control without faults: it must elect and write; its verdicts
// under faults are the checkers' and the matrix's.
func runControl(t *testing.T, def runtime.Definition, eps []string) {
	spec := def.Describe()
	g := newGroup(t, spec.Store, eps, "t-"+spec.Name, selfCommand(spec.Name))
	for _, n := range []string{"c1", "c2", "c3"} {
		g.start(n)
	}
	g.waitElected(time.Minute, "")
	// A control may elect several at once (naive-lease granted tokens 1-3 within 1 ms and the
	// resource fenced token 1 off): any leader's accepted write shows it elects and writes.
	for deadline := time.Now().Add(time.Minute); g.acceptedAny() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no write accepted from any leader within a minute")
		}
	}
	checkSteps(t, g, spec)
	g.stopAll()
	g.mu.Lock()
	t.Logf("%s: %d events, overlaps: %v", spec.Name, len(g.events), g.violations())
	g.mu.Unlock()
}

// TestRecipes runs every recipe of candidates.Registry, grouped by store: one store cluster
// per store kind, shared by that store's recipes. Safe recipes go through exercise (election,
// SIGTERM handoffs and SIGKILL failovers within their bounds, no belief overlap); negative
// controls must elect and write. A recipe added to the registry is tested here with no edit.
func TestRecipes(t *testing.T) {
	byStore := map[string][]runtime.Definition{}
	var order []string
	for _, d := range candidates.Registry {
		if _, lib := d.(libraries.Recipe); lib {
			continue // not Go: the harness runs it in its own image (libraries, the matrix)
		}
		st := d.Describe().Store
		if byStore[st] == nil {
			order = append(order, st)
		}
		byStore[st] = append(byStore[st], d)
	}
	for _, st := range order {
		t.Run(st, func(t *testing.T) {
			var eps []string
			if st != storekinds.None {
				kind, err := stores.ParseKind(st)
				if err != nil {
					t.Fatal(err)
				}
				eps = launchStore(t, kind, stores.DefaultNodes(kind))
			}
			for _, d := range byStore[st] {
				t.Run(d.Describe().Name, func(t *testing.T) {
					switch {
					case !d.Describe().Negative:
						runRecipe(t, d, eps, true)
					case st == storekinds.None:
						// bully and ring are wrong only when the network splits: on a whole
						// network they elect, hand off and fail over like a safe recipe.
						runRecipe(t, d, eps, false)
					default:
						runControl(t, d, eps)
					}
				})
			}
			if st == storekinds.Etcd {
				t.Run("external-candidate", func(t *testing.T) { externalCandidate(t, eps) })
			}
		})
	}
}

// externalCandidate runs the non-Go example candidate through the same exercise as
// etcd-election, whose store mechanics and bounds it shares.
func externalCandidate(t *testing.T, eps []string) {
	bin := filepath.Join(t.TempDir(), "external-candidate")
	build := exec.Command("go", "build", "-o", bin, "../testdata/external-candidate")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build external candidate: %v\n%s", err, out)
	}
	def, err := candidates.Registry.Lookup("etcd-election")
	if err != nil {
		t.Fatal(err)
	}
	g := newGroup(t, storekinds.Etcd, eps, "t-external", func() *exec.Cmd { return exec.Command(bin) })
	exercise(t, g, def, true)
	for _, e := range g.events {
		if e.Kind == history.KindCampaigning && strings.Contains(e.Reason, "clock") {
			t.Error("external candidate should not declare clock awareness")
		}
	}
}

// TestLeaderForLifePod: the lock lives as long as the leader's Pod, not its process. A leader
// killed while its Pod stays (its node does not report the exit) keeps the lock: nobody is
// elected for longer than the failover bound. Deleting the Pod (the node reports) hands the
// lock over within the bound, with a higher token.
func TestLeaderForLifePod(t *testing.T) {
	def, err := candidates.Registry.Lookup("leader-for-life")
	if err != nil {
		t.Fatal(err)
	}
	eps := launchStore(t, storekinds.Kubernetes, stores.DefaultNodes(storekinds.Kubernetes))
	g := newGroup(t, storekinds.Kubernetes, eps, "t-lfl-pod", selfCommand("leader-for-life"))
	tm := def.TimingFor(g.cfg)
	for _, n := range []string{"c1", "c2", "c3"} {
		g.start(n)
	}
	cur := g.waitElected(time.Minute, "")
	g.waitAccepted(cur.Node, cur.Token, 2) // the leader works before it is killed
	g.mu.Lock()
	g.keepPod[cur.Node] = true
	g.mu.Unlock()
	g.signal(cur.Node, syscall.SIGKILL)
	g.waitExit(cur.Node, time.Minute)
	// An absence check: nobody may be elected while the dead leader's Pod stays; a loaded
	// machine can only hide an early election, not fail a correct recipe.
	select {
	case e := <-g.elected:
		t.Fatalf("%s elected (token %d) while the killed leader's Pod still exists", e.Node, e.Token)
	case <-time.After(tm.FailoverBound):
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	deleted := history.Now()
	if err := g.pods.DeletePod(ctx, cur.Node, ""); err != nil {
		t.Fatal(err)
	}
	next := g.waitElected(boundtest.Wait(tm.FailoverBound)+2*time.Second, cur.Node)
	d := time.Duration(next.T - deleted)
	t.Logf("the dead leader %s kept the lock for %v with its Pod; after the Pod's deletion %s led in %v (bound %v)",
		cur.Node, tm.FailoverBound, next.Node, d, tm.FailoverBound)
	boundtest.Check(t, "takeover after the Pod's deletion", d, tm.FailoverBound)
	if next.Token <= cur.Token {
		t.Errorf("token did not grow: %d after %d", next.Token, cur.Token)
	}
	g.waitAccepted(next.Node, next.Token, 2)
	g.stopAll()
	g.checkResource()
}
