package nemesis

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

var (
	probeMu     sync.Mutex
	probeActive = map[int]bool{} // fault id → applied and not healed
	probeHeals  int
)

// probeKind is a test-only kind that touches nothing outside the process: the scheduler's
// bookkeeping is tested with it; the real kinds have their own tests (kinds_test.go).
type probeKind struct{}

func init() { kinds["probe"] = uses[*signals](newSignals, probeKind{}) }

func (probeKind) def() kindDef {
	return kindDef{
		Traits: Traits{Name: "probe", Summary: "test only", DefaultTarget: TargetLeader, DefaultFor: "100ms",
			Classes: []NodeClass{ClassCandidate}, Colour: "#000"},
		params: []paramDef{{"fail", "apply fails", "no", oneOf("no", "yes", "half")}},
	}
}

func (probeKind) apply(ctx context.Context, s *signals, pf PlannedFault) (*applied, error) {
	targets, err := s.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	if pf.Params["fail"] == "yes" {
		return nil, fmt.Errorf("probe refused")
	}
	probeMu.Lock()
	probeActive[pf.ID] = true
	probeMu.Unlock()
	heal := func(context.Context) error {
		probeMu.Lock()
		defer probeMu.Unlock()
		delete(probeActive, pf.ID)
		probeHeals++
		return nil
	}
	if pf.Params["fail"] == "half" {
		return &applied{targets: targets, heal: heal}, fmt.Errorf("probe half applied")
	}
	return &applied{targets: targets, heal: heal}, nil
}

func runPlan(t *testing.T, spec string, env *fakeEnv, ctx context.Context) (*Nemesis, Plan, error) {
	t.Helper()
	p := planFor(t, spec, 2*time.Second)
	n := New(env, p.Topology)
	return n, p, n.Run(ctx, p)
}

func planFor(t *testing.T, spec string, phase time.Duration) Plan {
	t.Helper()
	return planOn(t, spec, phase, Topology{Candidates: []string{"c1", "c2"}, StoreKind: "etcd", TTL: 100 * time.Millisecond})
}

// planOn parses spec and plans it with seed 1 on topo.
func planOn(t *testing.T, spec string, phase time.Duration, topo Topology) Plan {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(1, phase, topo)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitForState polls cond until it holds; the deadline only stops a hung test, it is no bound.
func waitForState(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after a minute for %s", what)
		}
	}
}

// runReturns waits for Run's result; the faults left in the plan outlast the deadline by
// far, so Run returning at all shows it did not wait for them.
func runReturns(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Run did not return a minute after it was told to stop (its faults last 10 min)")
		return nil
	}
}

func TestRunRecordsPairs(t *testing.T) {
	env := &fakeEnv{t: t, leaders: []Leader{{"c2", 1}}}
	start := time.Now()
	_, p, err := runPlan(t, "probe:at=100ms,for=200ms + probe:target=follower,at=150ms,for=100ms + probe:fail=yes,at=0s + probe:fail=half,at=0s", env, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The last fault ends 300 ms into the plan at the earliest; no upper bound: a loaded
	// machine may run the timers late, and every fault's end is checked below.
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("run took %s, before its last fault's planned end", el)
	}
	starts, ends := map[int]history.Event{}, map[int]history.Event{}
	for _, e := range env.events {
		switch e.Kind {
		case history.KindFaultStart:
			starts[e.FaultID] = e
		case history.KindFaultEnd:
			ends[e.FaultID] = e
		}
	}
	if len(starts) != len(p.Faults) || len(ends) != len(p.Faults) {
		t.Fatalf("want a start and an end per fault, got %d/%d for %d", len(starts), len(ends), len(p.Faults))
	}
	for _, f := range p.Faults {
		s, e := starts[f.ID], ends[f.ID]
		if e.T < s.T {
			t.Errorf("fault %d ends before it starts", f.ID)
		}
		switch f.Params["fail"] {
		case "yes", "half":
			if s.Err == "" {
				t.Errorf("fault %d failed to apply but recorded no error", f.ID)
			}
		default:
			if s.Err != "" {
				t.Errorf("fault %d: %s", f.ID, s.Err)
			}
			want := "c2"
			if f.Target == TargetFollower {
				want = "c1"
			}
			if len(s.Targets) != 1 || s.Targets[0] != want {
				t.Errorf("fault %d (%s) targets %v, want %s", f.ID, f.Target, s.Targets, want)
			}
			if got := time.Duration(e.T - s.T); got < time.Duration(f.For) {
				t.Errorf("fault %d lasted %s, planned %s", f.ID, got, f.For)
			}
		}
	}
	probeMu.Lock()
	defer probeMu.Unlock()
	if len(probeActive) != 0 {
		t.Fatalf("left active: %v", probeActive)
	}
}

func TestRunNoLeaderIsRecorded(t *testing.T) {
	env := &fakeEnv{t: t}
	_, _, err := runPlan(t, "probe:at=0s", env, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev := env.faultEvents(); len(ev) != 2 || ev[0].Err == "" {
		t.Fatalf("events %+v", ev)
	}
	if p := env.eventsOf(history.KindFaultPlanned); len(p) != 1 || p[0].Spec != "probe:at=0s" || p[0].Count != 1 || env.events[0].Kind != history.KindFaultPlanned {
		t.Fatalf("the entry must be on record before its fault: %+v", env.events)
	}
}

func TestRunCancelHeals(t *testing.T) {
	env := &fakeEnv{t: t, leaders: []Leader{{"c1", 1}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := planFor(t, "probe:at=50ms,for=10m + probe:at=9m,for=100ms", 20*time.Minute)
	n := New(env, p.Topology)
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx, p) }()
	// Cancel in the middle of the first fault.
	waitForState(t, "the first fault to be active", func() bool { return len(n.Active()) == 1 })
	cancel()
	if err := runReturns(t, done); err != nil {
		t.Fatal(err)
	}
	probeMu.Lock()
	active := len(probeActive)
	probeMu.Unlock()
	if active != 0 || len(n.Active()) != 0 {
		t.Fatalf("cancel left faults active")
	}
	if ev := env.faultEvents(); len(ev) != 2 {
		t.Fatalf("the second fault must never start: %d events", len(ev))
	}
	if err := n.HealAll(ctx); err != nil { // idempotent, fine on a cancelled ctx
		t.Fatal(err)
	}
}

func TestHealAllStopsRun(t *testing.T) {
	env := &fakeEnv{t: t, leaders: []Leader{{"c1", 1}}}
	p := planFor(t, "probe:at=50ms,for=10m + probe:at=9m,for=100ms", 20*time.Minute)
	n := New(env, p.Topology)
	done := make(chan error, 1)
	go func() { done <- n.Run(context.Background(), p) }()
	waitForState(t, "the first fault to be active", func() bool { return len(n.Active()) == 1 })
	if err := n.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := runReturns(t, done); err != nil {
		t.Fatal(err)
	}
	if ev := env.faultEvents(); len(ev) != 2 || ev[1].Kind != history.KindFaultEnd {
		t.Fatalf("events: %+v", ev)
	}
}

// A sidecar start the prewarm has begun is not cancelled when the run's ctx ends: a create
// cancelled in flight can leave a container nobody removes. The heal waits for the start and
// its sweep removes every sidecar that started.
func TestPrewarmStartOutlivesTheRunsCtx(t *testing.T) {
	env := newFakeEnv(t, []string{"c1", "c2", "c3"}, []string{"redis"})
	for _, n := range append(slices.Clone(env.cands), env.store...) {
		n.running, n.pid = true, os.Getpid()
	}
	gate := make(chan struct{})
	var mu sync.Mutex
	var begun int
	cancelled := map[string]bool{}
	env.sidecarStarting = func(ctx context.Context, target string) error {
		mu.Lock()
		begun++
		mu.Unlock()
		<-gate
		if ctx.Err() != nil {
			mu.Lock()
			cancelled[target] = true
			mu.Unlock()
			return ctx.Err()
		}
		return nil
	}
	p := planOn(t, "partition:shape=one-way,target=node:c2,peer=node:c3,at=10m,for=1m", 20*time.Minute, env.topo())
	n := New(env, p.Topology)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx, p) }()
	waitForState(t, "sidecar starts in flight", func() bool { mu.Lock(); defer mu.Unlock(); return begun > 0 })
	cancel()
	if err := runReturns(t, done); err != nil {
		t.Fatal(err)
	}
	close(gate)
	if err := n.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(cancelled) > 0 {
		t.Errorf("sidecar starts cancelled with the run's ctx: %v", cancelled)
	}
	env.mu.Lock()
	started, removed := slices.Sorted(slices.Values(env.sidecarsStarted)), slices.Sorted(slices.Values(env.sidecarsRemoved))
	env.mu.Unlock()
	if len(started) == 0 || !slices.Equal(started, removed) {
		t.Errorf("sidecars started %v, removed %v: every started one must be removed", started, removed)
	}
}

// The mechanisms are made from the registry, one of each, in the sweep order HealAll relies
// on: processes continued and nodes thawed and started before clocks, rules and toxics are
// cleared on them.
func TestMechanismsInSweepOrder(t *testing.T) {
	n := New(&fakeEnv{}, Topology{})
	var got []string
	for _, m := range n.mechanisms {
		got = append(got, fmt.Sprintf("%T", m))
	}
	want := []string{"*nemesis.signals", "*nemesis.containers", "*nemesis.clocks", "*nemesis.netRules", "*nemesis.proxyToxics", "*nemesis.fenceFaults"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("mechanisms %v, want %v", got, want)
	}
	if len(n.live.watchers()) != 1 {
		t.Errorf("watchers %d, want 1 (the network rules)", len(n.live.watchers()))
	}
}
