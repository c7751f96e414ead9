package shrink

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

func chainCase(t *testing.T, spec string) Case {
	t.Helper()
	s, err := nemesis.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	topo := nemesis.Topology{Candidates: []string{"c1", "c2", "c3", "c4"}, StoreNodes: []string{"redis-1"}, StoreKind: "redis", TTL: 2 * time.Second}
	p, err := s.Plan(1, 30*time.Second, topo)
	if err != nil {
		t.Fatal(err)
	}
	return Case{Nodes: 4, Warmup: 8 * time.Second, Recovery: 8 * time.Second, Plan: p}
}

func trigger(c Case, kind string) *nemesis.PlannedTrigger {
	for i := range c.Plan.Triggers {
		if c.Plan.Triggers[i].Fault.Kind == kind {
			return &c.Plan.Triggers[i]
		}
	}
	return nil
}

// The chain itself shrinks: a link the failure does not need is dropped, the needed one
// starts sooner after its event and is held shorter, down to what still fails; the phase
// keeps its length (when triggers fire is up to the run).
func TestShrinkTriggerChain(t *testing.T) {
	start := chainCase(t, "pause:target=leader,on=write:3,after=500ms,for=4s; kill:target=trigger,on=fault-end,after=1s,for=2s")
	if got := start.Size(); got.Faults != 2 || got.FaultTime != 6*time.Second || got.Delay != 1500*time.Millisecond {
		t.Fatalf("start size %s, want 2 faults, 6s of faults, 1.5s of delays", got)
	}
	clock := &fakeClock{t: time.Unix(0, 0)}
	r := &fakeRunner{clock: clock, oracle: func(c Case) bool {
		p := trigger(c, "pause")
		return p != nil && time.Duration(p.Fault.For) >= time.Second
	}}
	res, err := Shrink(context.Background(), r, start, Options{Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Minimal
	p := trigger(m, "pause")
	if len(m.Plan.Triggers) != 1 || p == nil {
		t.Fatalf("minimal chain %+v, want the pause alone", m.Plan.Triggers)
	}
	if p.After != 0 || time.Duration(p.Fault.For) < time.Second || time.Duration(p.Fault.For) >= 2*time.Second {
		t.Errorf("pause after=%v for=%v, want after=0 and 1s <= for < 2s", p.After, p.Fault.For)
	}
	if p.Every != p.After+p.Fault.For {
		t.Errorf("cooldown %v no longer after+for (%v)", p.Every, p.After+p.Fault.For)
	}
	if m.FaultPhase() != start.FaultPhase() {
		t.Errorf("faults phase shrunk to %v with a trigger left", m.FaultPhase())
	}
	spec, exact := Spec(m.Plan)
	if !strings.Contains(spec, "on=write:3") || !exact {
		t.Errorf("minimal spec %q (exact %v) lost its event", spec, exact)
	}
	if _, err := nemesis.Parse(spec); err != nil {
		t.Errorf("minimal spec %q does not parse: %v", spec, err)
	}
}

func TestSpecRendersTriggers(t *testing.T) {
	c := chainCase(t, "pause:target=follower,at=2s,for=4s; kill:target=trigger,on=fault-start,after=1s,for=2s,count=2,every=10s")
	spec, _ := Spec(c.Plan)
	for _, want := range []string{"pause:target=follower,process=all,at=", "kill:target=trigger,on=fault-start,after=1s,for=2s,every=10s,count=2"} {
		if !strings.Contains(spec, want) {
			t.Errorf("spec %q lacks %q", spec, want)
		}
	}
	if _, err := nemesis.Parse(spec); err != nil {
		t.Errorf("spec %q does not parse: %v", spec, err)
	}
}

func TestRunLineCarriesUntilAndTheChain(t *testing.T) {
	c := chainCase(t, "pause:target=leader,on=write:3,after=30ms,count=1,for=4s")
	base := harness.Config{Store: "redis", Recipe: "redis-setnx", TTL: 2 * time.Second, ResourceMode: "unfenced",
		Workload: "steady", Seed: 42, Until: "faults"}
	line, exact := RunLine(base, c)
	want := "splitbrain run --store redis --recipe redis-setnx --nodes 4 --warmup 8s --time 30s --recovery 8s --ttl 2s --resource unfenced --workload steady --seed 42 --until faults --nemesis pause:target=leader,process=all,on=write:3,after=30ms,for=4s,count=1"
	if line != want || !exact {
		t.Errorf("run line\n%s (exact %v)\nwant\n%s", line, exact, want)
	}
	if got := ShellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("ShellQuote(it's) = %s", got)
	}
}

// A drop that leaves only links chained on other faults (on=fault-start, on=fault-end) is
// never tried: nothing starts the first of them, so the run is unknown, nothing-faulted, and
// the tries only spend the budget. Measured (issue 48): redis-del-unowned's find
// "freeze on=write:3; delay on=fault-start; bandwidth on=fault-start" spent its whole 90 s
// shrink on dropping the freeze (2 tries, both unknown) and removed nothing. The later
// links are dropped first, and the unneeded ones go.
func TestShrinkNeverTriesAStalledChain(t *testing.T) {
	start := chainCase(t, "freeze:target=leader,on=write:3,after=10ms,count=1,for=8s; delay:target=follower,on=fault-start,after=30ms,count=1,for=2s; bandwidth:target=all-candidates,on=fault-start,after=500ms,count=1,for=6s")
	clock := &fakeClock{t: time.Unix(0, 0)}
	r := &fakeRunner{clock: clock, oracle: func(c Case) bool { return trigger(c, "freeze") != nil }}
	res, err := Shrink(context.Background(), r, start, Options{Tries: 2, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range r.runs {
		if stalled(c) {
			t.Errorf("try %d ran a chain no event can start: %+v", i+1, c.Plan.Triggers)
		}
	}
	if len(r.runs) == 0 || trigger(r.runs[0], "bandwidth") != nil {
		t.Errorf("the first try kept the last link; want it dropped first")
	}
	if m := res.Minimal; len(m.Plan.Triggers) != 1 || trigger(m, "freeze") == nil {
		t.Errorf("minimal chain %+v, want the freeze alone", m.Plan.Triggers)
	}
}

// Every form the nemesis plans renders as a spec the nemesis takes back: each kind with
// each target, each partition shape, timed and triggered. A printed REPRODUCE line is this
// spec; one the parser refuses cannot run at all (issue 48: partition:shape=leader-from-store
// was rendered with the peer=store its planner records, which the spec refuses, and two
// finds printed a line that reproduced "0/5").
func TestSpecOfEveryPlannedFormParses(t *testing.T) {
	topo := nemesis.Topology{Candidates: []string{"c1", "c2", "c3", "c4"}, StoreNodes: []string{"etcd-1", "etcd-2", "etcd-3"}, StoreKind: "etcd", TTL: 2 * time.Second}
	var forms []string
	for _, k := range nemesis.Kinds() {
		if k.Name == "partition" {
			for _, s := range nemesis.Shapes() {
				forms = append(forms, "partition:shape="+s.Name)
			}
			continue
		}
		for _, tg := range k.Targets {
			if !strings.Contains(tg, ":") {
				forms = append(forms, k.Name+":target="+tg)
			}
		}
	}
	planned := 0
	for _, form := range forms {
		for _, timing := range []string{",at=2s,for=4s", ",on=write:3,after=30ms,for=4s,count=1"} {
			s, err := nemesis.Parse(form + timing)
			if err != nil {
				continue // a form this spec refuses on its own (stale-leader timed, ...)
			}
			p, err := s.Plan(1, 30*time.Second, topo)
			if err != nil {
				continue // a form this topology refuses (evict off kubernetes, ...)
			}
			planned++
			spec, _ := Spec(p)
			back, err := nemesis.Parse(spec)
			if err != nil {
				t.Errorf("%s%s plans, but its spec %q does not parse: %v", form, timing, spec, err)
				continue
			}
			if _, err := back.Plan(1, 30*time.Second, topo); err != nil {
				t.Errorf("%s%s: its spec %q does not plan: %v", form, timing, spec, err)
			}
		}
	}
	if planned < 40 {
		t.Errorf("only %d forms planned: the test lost its coverage", planned)
	}
}
