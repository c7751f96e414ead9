package nemesis

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// runKind plans spec on a fake run (candidates c1..c3, store s1..s3), runs it, calls during
// while the fault is in effect and returns after the run's final HealAll.
func runKind(t *testing.T, e *fakeEnv, spec string, during func()) {
	t.Helper()
	runKindOn(t, e, e, spec, during)
}

// runKindOn is runKind with the nemesis talking to env, an Env built around e (e.g. one
// with more capabilities); it returns the plan it ran.
func runKindOn(t *testing.T, env Env, e *fakeEnv, spec string, during func()) Plan {
	t.Helper()
	n, p, done := startPlanOn(t, env, e, e.topo(), spec, 5*time.Second, 1)
	during()
	if err := <-done; err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	// The run lifecycle ends every run with HealAll: it also removes the chains and sidecars.
	if err := n.HealAll(context.Background()); err != nil {
		t.Errorf("%s: HealAll: %v", spec, err)
	}
	for _, ev := range e.events {
		if (ev.Kind == history.KindFaultStart || ev.Kind == history.KindFaultEnd) && ev.Err != "" {
			t.Errorf("%s: %s recorded error %q", spec, ev.Kind, ev.Err)
		}
	}
	if len(e.eventsOf(history.KindFaultEnd)) == 0 {
		t.Errorf("%s: no fault-end recorded", spec)
	}
	return p
}

// startPlanOn runs spec's plan (faults phase of length phase, on topo) through env in the
// background and returns once starts faults have started (events of e; -1: every planned
// one), with the nemesis, the plan and Run's result to come.
func startPlanOn(t *testing.T, env Env, e *fakeEnv, topo Topology, spec string, phase time.Duration, starts int) (*Nemesis, Plan, chan error) {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(1, phase, topo)
	if err != nil {
		t.Fatal(err)
	}
	n := New(env, p.Topology)
	done := make(chan error, 1)
	go func() { done <- n.Run(context.Background(), p) }()
	if starts < 0 {
		starts = len(p.Faults)
	}
	deadline := time.Now().Add(time.Minute) // only ends a hung test
	for e != nil && len(e.eventsOf(history.KindFaultStart)) < starts {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d fault(s) did not start within a minute", spec, starts)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return n, p, done
}

func threeByThree(t *testing.T) *fakeEnv {
	return newFakeEnv(t, []string{"c1", "c2", "c3"}, []string{"s1", "s2", "s3"})
}

// Each kind's apply and heal, without Docker: what the node sees while the fault lasts and
// that heal undoes all of it.
func TestFreezeAppliesAndHeals(t *testing.T) {
	e := threeByThree(t)
	c1 := e.node("c1")
	runKind(t, e, "freeze:target=node:c1,at=0s,for=200ms", func() {
		if st, _ := c1.State(context.Background()); !st.Paused {
			t.Errorf("c1 not frozen while the fault lasts: %+v", st)
		}
	})
	if st, _ := c1.State(context.Background()); st.Paused {
		t.Errorf("c1 still frozen after heal")
	}
	if got := strings.Join(c1.callList(), ","); got != "freeze,thaw" {
		t.Errorf("calls %q, want freeze,thaw", got)
	}
}

// A freezer stuck in FREEZING (runc's "unable to freeze") is tried again; one that stays
// stuck fails the fault, naming the attempts.
func TestFreezeTriesAStuckFreezerAgain(t *testing.T) {
	e := threeByThree(t)
	c1 := e.node("c1")
	c1.stuckFreezes = 2
	runKind(t, e, "freeze:target=node:c1,at=0s,for=200ms", func() {
		if st, _ := c1.State(context.Background()); !st.Paused {
			t.Errorf("c1 not frozen after two stuck attempts: %+v", st)
		}
	})
	if got := strings.Join(c1.callList(), ","); got != "freeze,freeze,freeze,thaw" {
		t.Errorf("calls %q, want three freezes (two stuck) and the thaw", got)
	}
	c1.stuckFreezes = 10
	if err := freezeRetrying(context.Background(), c1); err == nil || !strings.Contains(err.Error(), "tried 4 times") {
		t.Errorf("a freezer that stays stuck: %v, want the error after 4 attempts", err)
	}
	c1.fail = "freeze"
	before := len(c1.callList())
	if err := freezeRetrying(context.Background(), c1); err == nil || len(c1.callList()) != before+1 {
		t.Errorf("another freeze error was tried %d times (%v), want once", len(c1.callList())-before, err)
	}
}

func TestKillAppliesAndHeals(t *testing.T) {
	e := threeByThree(t)
	c2 := e.node("c2")
	c2.killReturn = 30 * time.Millisecond
	runKind(t, e, "kill:target=node:c2,at=0s,for=200ms", func() {
		if st, _ := c2.State(context.Background()); st.Running {
			t.Errorf("c2 running while killed")
		}
	})
	if st, _ := c2.State(context.Background()); !st.Running {
		t.Errorf("c2 not restarted by heal")
	}
	if got := strings.Join(c2.callList(), ","); got != "kill SIGKILL,start" {
		t.Errorf("calls %q, want kill SIGKILL,start (no host pid: the engine's kill)", got)
	}
	if !slices.ContainsFunc(e.events, func(ev history.Event) bool {
		return ev.Kind == history.KindSignal && ev.Node == "c2" && ev.Signal == "SIGKILL"
	}) {
		t.Errorf("no SIGKILL signal event for c2: the checkers end its tenure on it")
	}
	// The next leader may be elected the moment c2 dies: the fault must start no later,
	// or that failover goes unmeasured.
	starts := e.eventsOf(history.KindFaultStart)
	if len(starts) != 1 || starts[0].T > c2.killedAt {
		t.Errorf("fault start %+v, want one stamped at or before the kill took effect (%d)", starts, c2.killedAt)
	}
}

// A killed node runs again once started, before the restart's checks return: the fault ends
// then, so a violation on an in-memory store emptied by the kill comes after the fault's end
// (a Redis find was classed own-logic when its first violation came 43 ms before the
// fault-end of the restart that emptied it).
func TestKillEndsWhenItsNodeStarts(t *testing.T) {
	e := threeByThree(t)
	c2 := e.node("c2")
	c2.startCheck = 100 * time.Millisecond
	runKind(t, e, "kill:target=node:c2,at=0s,for=100ms", func() {})
	ends := e.eventsOf(history.KindFaultEnd)
	if len(ends) != 1 || c2.startedAt == 0 {
		t.Fatalf("fault ends %+v, c2 started at %d", ends, c2.startedAt)
	}
	if d := time.Duration(ends[0].T - c2.startedAt); d < 0 || d > 50*time.Millisecond {
		t.Errorf("fault end %v after c2's start, want at its start (not after the 100 ms check that followed)", d)
	}
}

func TestNetworkFaultsApplyAndHeal(t *testing.T) {
	for _, spec := range []string{
		"partition:shape=isolate,target=node:c1,peer=store,at=0s,for=200ms",
		"partition:shape=isolate,target=node:c1,peer=store,mode=reject,at=0s,for=200ms",
		"loss:target=node:c1,p=0.5,at=0s,for=200ms",
	} {
		t.Run(spec, func(t *testing.T) {
			e := threeByThree(t)
			for _, n := range append(slices.Clone(e.cands), e.store...) {
				n.pid = os.Getpid() // network faults only check the node runs; no signal is sent
			}
			c1 := e.node("c1")
			runKind(t, e, spec, func() {
				if rules := c1.ruleList(); !slices.ContainsFunc(rules, func(r string) bool { return strings.HasPrefix(r, "-A ") }) {
					t.Errorf("no iptables rule in c1's namespace while the fault lasts: %q", rules)
				}
			})
			if rules := c1.ruleList(); len(rules) != 0 {
				t.Errorf("rules left after heal: %q", rules)
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if len(e.sidecarsStarted) == 0 || len(e.sidecarsStarted) != len(e.sidecarsRemoved) {
				t.Errorf("sidecars started %v, removed %v: every one must go", e.sidecarsStarted, e.sidecarsRemoved)
			}
		})
	}
}

// A node killed while its partition rules are being removed lost them with its namespace:
// the heal succeeded, it is not a heal failure that makes the run unknown.
func TestPartitionHealOfNodeKilledMeanwhile(t *testing.T) {
	e := threeByThree(t)
	for _, n := range append(slices.Clone(e.cands), e.store...) {
		n.pid = os.Getpid()
	}
	c1 := e.node("c1")
	runKind(t, e, "partition:shape=isolate,target=node:c1,peer=store,at=0s,for=200ms", func() {
		c1.mu.Lock()
		c1.dieInRemoval = true
		c1.mu.Unlock()
	})
	if st, _ := c1.State(context.Background()); st.Running {
		t.Fatalf("c1 still running: the test did not kill it during removal")
	}
}

func TestCandidateClockAppliesAndHeals(t *testing.T) {
	e := threeByThree(t)
	c3 := e.node("c3")
	path := defaultCandidateClockFile
	runKind(t, e, "clock:op=bump,target=node:c3,delta=-90s,at=0s,for=200ms", func() {
		if got := strings.TrimSpace(c3.file(path)); got != fmt.Sprint(int64(-90*time.Second)) {
			t.Errorf("offset file %q while skewed, want %d", got, int64(-90*time.Second))
		}
	})
	if got := strings.TrimSpace(c3.file(path)); got != "0" {
		t.Errorf("offset file %q after heal, want 0", got)
	}
	if !slices.ContainsFunc(c3.callList(), func(c string) bool { return strings.HasPrefix(c, "exec mv -f ") }) {
		t.Errorf("offset file not renamed into place (calls %q): a reader could see it half-written", c3.callList())
	}
}

// op=rate writes OFFSET RATE SINCE (SINCE = when the fault started). The heal steps the wall
// line back to its offset before the rate and leaves the monotonic line continuous: the
// setting before the heal and the one after give the monotonic line the same reading at one
// instant inside the heal, no earlier than the fault's length after its start. The old heal
// (one number, the offset before the rate) gave the same reading only at the fault's start:
// for this 2.5x clock a 300 ms step back at the heal.
func TestCandidateClockRateAppliesAndHeals(t *testing.T) {
	for _, rate := range []string{"2.5", "0.5"} {
		e := threeByThree(t)
		c2 := e.node("c2")
		path := defaultCandidateClockFile
		before := time.Now().UnixNano()
		var during contract.ClockSetting
		runKind(t, e, "clock:op=rate,rate="+rate+",target=node:c2,at=0s,for=200ms", func() {
			st, err := contract.ParseClockSetting(c2.file(path))
			if err != nil || st.Offset != 0 || st.Mono != 0 || fmt.Sprint(st.Rate) != rate || st.Since < before || st.Since > time.Now().UnixNano() {
				t.Errorf("clock file %q while the rate is on (%+v, %v), want 0 %s <start>", c2.file(path), st, err, rate)
			}
			during = st
		})
		healed := time.Now().UnixNano()
		after, err := contract.ParseClockSetting(c2.file(path))
		if err != nil {
			t.Fatalf("rate %s: clock file %q after heal: %v", rate, c2.file(path), err)
		}
		if w := after.WallOffsetAt(healed); w != 0 {
			t.Errorf("rate %s: wall offset %v after heal (file %q), want 0: the wall line steps back by the drift", rate, w, c2.file(path))
		}
		// Both settings are linear in time: where do their monotonic lines meet?
		r := during.Rate
		meet := during.Since + int64(float64(after.MonoOffsetAt(during.Since)-during.Mono)/(r-1))
		if minHeal := during.Since + int64(200*time.Millisecond); meet < minHeal || meet > healed {
			t.Errorf("rate %s: the monotonic line before and after the heal meet %v after the fault's start, want within [200ms, %v] (the heal): it jumped at the heal (file %q)",
				rate, time.Duration(meet-during.Since), time.Duration(healed-during.Since), c2.file(path))
		}
	}
}

// With the clock file in a host directory bind-mounted into the candidate (the harness's
// way), a bump and its heal are host file writes: no Docker copy, no exec in the container.
func TestCandidateClockHostFile(t *testing.T) {
	e := threeByThree(t)
	dir := t.TempDir()
	env := hostClockEnv{fakeEnv: e, dir: dir}
	c1 := e.node("c1")
	host := filepath.Join(dir, "c1")
	runKindOn(t, env, e, "clock:op=bump,target=node:c1,delta=+5s,at=0s,for=200ms", func() {
		if b, err := os.ReadFile(host); err != nil || strings.TrimSpace(string(b)) != "5000000000" {
			t.Errorf("host clock file %q (%v) while bumped, want 5000000000", b, err)
		}
	})
	if b, err := os.ReadFile(host); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Errorf("host clock file %q (%v) after heal, want 0", b, err)
	}
	if calls := c1.callList(); len(calls) != 0 {
		t.Errorf("clock fault on a bind-mounted clock file made container calls %q", calls)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left in the clock directory: %v", left)
	}
}

type hostClockEnv struct {
	*fakeEnv
	dir string
}

// faketimeEnv is a host clock env whose candidates are library processes under libfaketime.
type faketimeEnv struct {
	hostClockEnv
}

func (f faketimeEnv) CandidateFaketimeHostFile(candidate string) string {
	return filepath.Join(f.dir, candidate+".faketime")
}

// A library candidate's bump moves its libfaketime file too (the wall offset, seconds to the
// nanosecond), and the heal moves it back; a rate cannot reach it and is refused, not faked.
func TestCandidateFaketimeFile(t *testing.T) {
	e := threeByThree(t)
	dir := t.TempDir()
	env := faketimeEnv{hostClockEnv{fakeEnv: e, dir: dir}}
	ft := filepath.Join(dir, "c1.faketime")
	runKindOn(t, env, e, "clock:op=bump,target=node:c1,delta=-1500ms,at=0s,for=200ms", func() {
		if b, err := os.ReadFile(ft); err != nil || string(b) != "-1.500000000\n" {
			t.Errorf("faketime file %q (%v) while bumped, want -1.500000000", b, err)
		}
	})
	if b, err := os.ReadFile(ft); err != nil || string(b) != "+0.000000000\n" {
		t.Errorf("faketime file %q (%v) after heal, want +0.000000000", b, err)
	}
	p := planOn(t, "clock:op=rate,rate=2,target=node:c1,at=0s,for=200ms", 5*time.Second, e.topo())
	n := New(env, p.Topology)
	runErr := n.Run(context.Background(), p)
	n.HealAll(context.Background())
	starts := e.eventsOf(history.KindFaultStart)
	last := starts[len(starts)-1]
	if !strings.Contains(last.Err, "libfaketime") && (runErr == nil || !strings.Contains(runErr.Error(), "libfaketime")) {
		t.Errorf("a rate on a library candidate: start %+v, run error %v (want an error naming libfaketime)", last, runErr)
	}
	if b, _ := os.ReadFile(ft); string(b) != "+0.000000000\n" {
		t.Errorf("faketime file %q after a refused rate, want it untouched", b)
	}
}

func (h hostClockEnv) CandidateClockHostFile(candidate string) string {
	return filepath.Join(h.dir, candidate)
}

// pause stops the node's real host processes: a child process stands in for the container.
func TestPauseAppliesAndHeals(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	e := threeByThree(t)
	c1 := e.node("c1")
	c1.pid = cmd.Process.Pid
	state := func() string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c1.pid))
		if err != nil {
			return "?"
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		return f[0]
	}
	runKind(t, e, "pause:target=node:c1,at=0s,for=200ms", func() {
		if s := state(); s != "T" {
			t.Errorf("c1's process state %s while paused, want T (stopped)", s)
		}
	})
	if s := state(); s == "T" {
		t.Errorf("c1's process still stopped after heal")
	}
}

// podFakeEnv is a kubernetes run whose candidates have Pods: EvictPod records the eviction.
type podFakeEnv struct {
	*fakeEnv
	evicted []string
}

func (e *podFakeEnv) EvictPod(_ context.Context, candidate string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evicted = append(e.evicted, candidate)
	return nil
}

// evict deletes the Pod and leaves the process running; the heal SIGKILLs and restarts it.
func TestEvictAppliesAndHeals(t *testing.T) {
	base := threeByThree(t)
	base.kind = "kubernetes"
	e := &podFakeEnv{fakeEnv: base}
	c3 := e.node("c3")
	p := runKindOn(t, e, base, "evict:target=node:c3,at=0s,for=200ms", func() {
		e.mu.Lock()
		evicted := slices.Clone(e.evicted)
		e.mu.Unlock()
		if st, _ := c3.State(context.Background()); !st.Running || !slices.Equal(evicted, []string{"c3"}) {
			t.Errorf("while evicted: c3 running %v (want true), pods evicted %v (want [c3])", st.Running, evicted)
		}
	})
	if got := strings.Join(c3.callList(), ","); got != "kill SIGKILL,start" {
		t.Errorf("calls %q, want kill SIGKILL,start (the kubelet's kill, then the replacement)", got)
	}
	if !slices.ContainsFunc(e.events, func(ev history.Event) bool {
		return ev.Kind == history.KindSignal && ev.Node == "c3" && ev.Signal == "SIGKILL"
	}) {
		t.Error("no SIGKILL signal event for c3")
	}
	// Without Pods (another store's run) the fault is an error, not a silent no-op.
	if _, err := kinds["evict"].start(context.Background(), New(base, p.Topology).mechanisms, p.Faults[0]); err == nil || !strings.Contains(err.Error(), "no Pods") {
		t.Errorf("evict without PodEnv: %v", err)
	}
}
