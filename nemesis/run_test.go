package nemesis

import (
	"context"
	"fmt"
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

func init() { kinds["probe"] = probeKind{} }

func (probeKind) def() kindDef {
	return kindDef{
		Traits: Traits{Name: "probe", Summary: "test only", DefaultTarget: TargetLeader, DefaultFor: "100ms",
			Classes: []NodeClass{ClassCandidate}, Colour: "#000"},
		params: []paramDef{{"fail", "apply fails", "no", oneOf("no", "yes", "half")}},
	}
}

func (probeKind) apply(ctx context.Context, n *Nemesis, pf PlannedFault) (*applied, error) {
	targets, err := n.targets(ctx, pf)
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
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	topo := Topology{Candidates: []string{"c1", "c2"}, StoreKind: "etcd", TTL: 100 * time.Millisecond}
	p, err := s.Plan(1, 2*time.Second, topo)
	if err != nil {
		t.Fatal(err)
	}
	n := New(env, p.Topology)
	return n, p, n.Run(ctx, p)
}

func TestRunRecordsPairs(t *testing.T) {
	env := &fakeEnv{t: t, leaders: []Leader{{"c2", 1}}}
	start := time.Now()
	_, p, err := runPlan(t, "probe:at=100ms,for=200ms + probe:target=follower,at=150ms,for=100ms + probe:fail=yes,at=0s + probe:fail=half,at=0s", env, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 300*time.Millisecond || el > 2*time.Second {
		t.Fatalf("run took %s", el)
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
	go func() { time.Sleep(150 * time.Millisecond); cancel() }()
	start := time.Now()
	n, _, err := runPlan(t, "probe:at=50ms,for=1500ms + probe:at=1800ms,for=100ms", env, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("cancelled run took %s", el)
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
	s, _ := Parse("probe:at=50ms,for=1500ms + probe:at=1800ms,for=100ms")
	p, err := s.Plan(1, 2*time.Second, Topology{Candidates: []string{"c1"}, StoreKind: "etcd", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	n := New(env, p.Topology)
	done := make(chan error)
	go func() { done <- n.Run(context.Background(), p) }()
	time.Sleep(200 * time.Millisecond)
	if len(n.Active()) != 1 {
		t.Fatalf("active: %v", n.Active())
	}
	if err := n.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Second):
		t.Fatal("Run did not return after HealAll")
	}
	if ev := env.faultEvents(); len(ev) != 2 || ev[1].Kind != history.KindFaultEnd {
		t.Fatalf("events: %+v", ev)
	}
}
