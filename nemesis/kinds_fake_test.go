package nemesis

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(1, 5*time.Second, e.topo())
	if err != nil {
		t.Fatal(err)
	}
	n := New(env, p.Topology)
	done := make(chan error, 1)
	go func() { done <- n.Run(context.Background(), p) }()
	deadline := time.Now().Add(5 * time.Second)
	for len(e.eventsOf(history.KindFaultStart)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no fault-start within 5 s", spec)
		}
		time.Sleep(5 * time.Millisecond)
	}
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

// op=rate writes OFFSET RATE SINCE (SINCE = when the fault started) and the heal writes the
// old offset back as one number.
func TestCandidateClockRateAppliesAndHeals(t *testing.T) {
	e := threeByThree(t)
	c2 := e.node("c2")
	path := defaultCandidateClockFile
	before := time.Now().UnixNano()
	runKind(t, e, "clock:op=rate,rate=2.5,target=node:c2,at=0s,for=200ms", func() {
		st, err := contract.ParseClockSetting(c2.file(path))
		if err != nil || st.Offset != 0 || st.Rate != 2.5 || st.Since < before || st.Since > time.Now().UnixNano() {
			t.Errorf("clock file %q while the rate is on (%+v, %v), want 0 2.5 <start>", c2.file(path), st, err)
		}
	})
	if got := strings.TrimSpace(c2.file(path)); got != "0" {
		t.Errorf("clock file %q after heal, want 0", got)
	}
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
	if _, err := (evictKind{}).apply(context.Background(), New(base, p.Topology), p.Faults[0]); err == nil || !strings.Contains(err.Error(), "no Pods") {
		t.Errorf("evict without PodEnv: %v", err)
	}
}
