package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

func TestParseTriggerSpecs(t *testing.T) {
	ok := map[string]string{
		"pause:target=leader,on=elected,after=30ms,for=3xTTL":   "pause:target=leader,on=elected,after=30ms,for=3xTTL",
		"pause:on=write:3,for=1s":                               "pause:on=write:3,for=1s",
		"pause:on=write:1,for=1s":                               "pause:on=write,for=1s",
		"kill:on=step:lock-acquired,for=1s,every=10s,count=2":   "kill:on=step:lock-acquired,for=1s,every=10s,count=2",
		"pause:target=trigger,on=stepped-down,for=1s":           "pause:target=trigger,on=stepped-down,for=1s",
		"pause:on=campaigning,after=0s,for=1s":                  "pause:on=campaigning,after=0s,for=1s",
		"pause:for=1s; kill:target=trigger,on=fault-end,for=1s": "pause:for=1s; kill:target=trigger,on=fault-end,for=1s",
	}
	for spec, want := range ok {
		s, err := Parse(spec)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		if got := s.String(); got != want {
			t.Errorf("%s: canonical %q, want %q", spec, got, want)
		}
		again, err := Parse(s.String())
		if err != nil || again.String() != want {
			t.Errorf("%s: canonical form does not parse back: %v", spec, err)
		}
	}
	bad := map[string]string{
		"pause:on=leader-change":             `unknown event "leader-change"`,
		"pause:on=elected,after=-30ms":       "after=-30ms is negative",
		"pause:on=elected,after=-1xTTL":      "after=-1xTTL is negative",
		"pause:after=30ms":                   "needs on=EVENT",
		"pause:target=trigger":               "target=trigger names the node",
		"pause:on=elected,at=1s":             "at= places a time-tabled fault",
		"pause:on=elected,jitter=1s":         "jitter= shifts",
		"pause:on=write:0":                   "whole number >= 1",
		"pause:on=write:x":                   "whole number >= 1",
		"pause:on=step":                      "name the step",
		"pause:on=step:a b":                  "step names use",
		"pause:on=elected:2":                 "takes no argument",
		"pause:on=fault-end,for=1s":          "has no other fault",
		"pause:on=elected,after=soon":        "bad duration",
		"pause:target=store-leader,after=1s": "needs on=EVENT",
	}
	for spec, want := range bad {
		_, err := Parse(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error saying %q", spec, err, want)
			continue
		}
		if !strings.Contains(err.Error(), "valid form") {
			t.Errorf("%s: the error does not show the valid form: %v", spec, err)
		}
	}
}

func TestCheckStepsRefusesStepsTheRecipeNeverEmits(t *testing.T) {
	s, err := Parse("pause:on=step:token-drawn,for=1s")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSteps("redis-incr-after-setnx", []string{"lock-acquired", "token-drawn"}); err != nil {
		t.Fatal(err)
	}
	err = s.CheckSteps("etcd-election", []string{"lock-acquired"})
	if err == nil || !strings.Contains(err.Error(), `never emits step "token-drawn"`) || !strings.Contains(err.Error(), "on=step:lock-acquired") {
		t.Fatalf("got %v", err)
	}
	err = s.CheckSteps("bully", nil)
	if err == nil || !strings.Contains(err.Error(), "declares no steps") {
		t.Fatalf("got %v", err)
	}
	if s, _ := Parse("pause:on=elected,for=1s"); s.CheckSteps("bully", nil) != nil {
		t.Fatal("a non-step trigger must not depend on the recipe's steps")
	}
}

func TestPlanTriggers(t *testing.T) {
	topo := Topology{Candidates: []string{"c1", "c2", "c3"}, StoreKind: "etcd", TTL: time.Second}
	s, err := Parse("pause:at=1s,for=2s; pause:on=elected,after=30ms,for=3xTTL; kill:on=write:2,for=1s,every=20s,count=3")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(7, time.Minute, topo)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Faults) != 1 || len(p.Triggers) != 2 {
		t.Fatalf("faults %d triggers %d", len(p.Faults), len(p.Triggers))
	}
	tr := p.Triggers[0]
	if tr.On != "elected" || tr.After != Duration(30*time.Millisecond) || tr.Fault.For != Duration(3*time.Second) ||
		tr.Every != Duration(30*time.Millisecond+3*time.Second) || tr.Fault.Target != TargetLeader {
		t.Fatalf("trigger planned as %+v", tr)
	}
	if k := p.Triggers[1]; k.Every != Duration(20*time.Second) || k.Count != 3 || k.On != "write:2" {
		t.Fatalf("trigger planned as %+v", k)
	}
	again, _ := s.Plan(7, time.Minute, topo)
	a, _ := json.Marshal(p)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Fatal("same seed, different plan")
	}
	var back Plan
	if err := json.Unmarshal(a, &back); err != nil || back.Triggers[1].trigger().N != 2 {
		t.Fatalf("plan JSON does not read back: %v %+v", err, back.Triggers)
	}
	for spec, want := range map[string]string{
		"pause:on=elected,after=50s,for=20s":         "longer than the fault phase",
		"pause:on=elected,after=1s,for=2s,every=3s":  "cooldown",
		"pause:on=elected,for=2s,every=1s":           "must be longer than for",
		"pause:target=trigger,on=elected,for=2xTTL":  "",
		"pause:target=follower,on=elected,for=2xTTL": "",
		// count= is what the run must see: 7 occurrences 10s apart cannot fit in a minute.
		"pause:on=elected,for=2s,every=10s,count=7": "count=7 occurrences cannot fit",
		"pause:on=elected,for=2s,every=10s,count=6": "",
	} {
		s, err := Parse(spec)
		if err == nil {
			_, err = s.Plan(1, time.Minute, topo)
		}
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: got %v, want %q", spec, err, want)
		}
	}
}

// loopEnv feeds what the nemesis records back into it, as the run's recorder does.
type loopEnv struct {
	*fakeEnv
	mu  sync.Mutex
	seq int64
	nem *Nemesis
}

func (l *loopEnv) Record(e history.Event) error {
	l.mu.Lock()
	l.seq++
	e.Seq = l.seq
	l.mu.Unlock()
	if err := l.fakeEnv.Record(e); err != nil {
		return err
	}
	l.nem.Observe(e)
	return nil
}

// feed records a candidate event and shows it to the nemesis.
func (l *loopEnv) feed(kind history.Kind, node string, mod func(*history.Event)) history.Event {
	l.mu.Lock()
	l.seq++
	e := history.Event{V: history.Version, Seq: l.seq, T: history.Now(), Source: history.SourceCandidate, Kind: kind, Node: node}
	l.mu.Unlock()
	if mod != nil {
		mod(&e)
	}
	l.nem.Observe(e)
	return e
}

func startTriggered(t *testing.T, spec string, phase time.Duration) (*loopEnv, Plan, chan error, context.CancelFunc) {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	topo := Topology{Candidates: []string{"c1", "c2", "c3"}, StoreKind: "etcd", TTL: 100 * time.Millisecond}
	p, err := s.Plan(1, phase, topo)
	if err != nil {
		t.Fatal(err)
	}
	env := &loopEnv{fakeEnv: &fakeEnv{t: t, leaders: []Leader{{"c1", 1}}}}
	env.nem = New(env, p.Topology)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- env.nem.Run(ctx, p) }()
	waitFor(t, "Run to arm its triggers", func() bool { return env.nem.armedTriggers() != nil })
	return env, p, done, cancel
}

// waitFor polls cond; its deadline only ends a hung test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// armedTriggers is the armed plan's triggers (nil outside Run's fault phase). Observe
// decides synchronously whether an event fires one, so a test reads fired right after it
// fed the event, with no wait for a fault that should not come.
func (n *Nemesis) armedTriggers() *armed {
	n.triggers.mu.Lock()
	defer n.triggers.mu.Unlock()
	return n.triggers.armed
}

// fired lists how often each trigger of the armed plan fired, in plan order.
func fired(t *testing.T, n *Nemesis) []int {
	t.Helper()
	a := n.armedTriggers()
	if a == nil {
		t.Fatal("no armed plan")
	}
	n.triggers.mu.Lock()
	defer n.triggers.mu.Unlock()
	out := make([]int, len(a.triggers))
	for i, tr := range a.triggers {
		out[i] = tr.fired
	}
	return out
}

func TestTriggerFiresOnTheEventNode(t *testing.T) {
	env, _, done, cancel := startTriggered(t, "probe:target=leader,on=elected,after=40ms,for=100ms,every=400ms", 5*time.Second)
	defer cancel()
	ev := env.feed(history.KindElected, "c2", func(e *history.Event) { e.Token = 5 })
	env.feed(history.KindElected, "c3", func(e *history.Event) { e.Token = 6 }) // busy: ignored
	waitFor(t, "the fault's start", func() bool { return len(env.eventsOf(history.KindFaultStart)) == 1 })
	st := env.eventsOf(history.KindFaultStart)[0]
	if len(st.Targets) != 1 || st.Targets[0] != "c2" {
		t.Fatalf("target leader with on=elected must be the elected node c2 (live leader is c1): %v", st.Targets)
	}
	if st.Trigger != "elected" || st.TriggerSeq != ev.Seq || st.TriggerT != ev.T || len(st.TriggerNodes) != 1 || st.TriggerNodes[0] != "c2" {
		t.Fatalf("fault-start does not say what triggered it: %+v", st)
	}
	if d := time.Duration(st.T - ev.T); d < 40*time.Millisecond {
		t.Fatalf("started %s after its event, before its after=40ms", d)
	}
	if st.FaultID != 1 {
		t.Fatalf("first triggered fault of a plan without timed faults has id %d, want 1", st.FaultID)
	}
	waitFor(t, "the heal", func() bool { return len(env.eventsOf(history.KindFaultEnd)) == 1 })
	// The cooldown (every=400ms) runs from the firing event; an event inside it fires
	// nothing. A machine slow enough to heal only after the cooldown cannot test that part.
	in := env.feed(history.KindElected, "c3", func(e *history.Event) { e.Token = 7 })
	if time.Duration(in.T-ev.T) < 400*time.Millisecond {
		if f := fired(t, env.nem); f[0] != 1 {
			t.Fatalf("an event inside the cooldown fired the trigger (fired %v)", f)
		}
	} else {
		t.Logf("the heal came %v after the event, past the cooldown: its inside is not tested", time.Duration(in.T-ev.T))
	}
	waitFor(t, "the cooldown's end", func() bool { return time.Duration(history.Now()-ev.T) > 450*time.Millisecond })
	env.feed(history.KindElected, "c3", func(e *history.Event) { e.Token = 8 })
	waitFor(t, "the second occurrence", func() bool { return len(env.eventsOf(history.KindFaultStart)) == 2 })
	if st := env.eventsOf(history.KindFaultStart)[1]; st.Targets[0] != "c3" || st.FaultID != 2 {
		t.Fatalf("second occurrence %+v", st)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	probeMu.Lock()
	defer probeMu.Unlock()
	if len(probeActive) != 0 {
		t.Fatalf("left active: %v", probeActive)
	}
}

func TestTriggerWriteNStepCountAndFaultEnd(t *testing.T) {
	env, _, done, cancel := startTriggered(t,
		"probe:on=write:3,for=50ms,every=60ms,count=1; probe:target=trigger,on=step:lock-acquired,for=50ms,every=60ms; probe:target=trigger,on=fault-end,for=30ms,every=5s", 5*time.Second)
	defer cancel()
	write := func(node string) {
		env.feed(history.KindWrite, node, func(e *history.Event) { e.Token, e.WriteID, e.CallT, e.Result = 1, "w", e.T, "accepted" })
	}
	env.feed(history.KindElected, "c1", func(e *history.Event) { e.Token = 1 })
	write("c1")
	write("c1")
	env.feed(history.KindStep, "c3", func(e *history.Event) { e.Name = "token-drawn" }) // another step: no
	if f := fired(t, env.nem); !slices.Equal(f, []int{0, 0, 0}) {
		t.Fatalf("fired before the third write or on another step: %v", f)
	}
	write("c1")
	waitFor(t, "write:3", func() bool { return len(env.eventsOf(history.KindFaultStart)) >= 1 })
	env.feed(history.KindStep, "c2", func(e *history.Event) { e.Name = "lock-acquired" })
	// write:3's end fires the fault-end trigger, on write:3's target.
	waitFor(t, "step and fault-end occurrences", func() bool { return len(env.eventsOf(history.KindFaultStart)) >= 3 })
	waitFor(t, "all three healed", func() bool { return len(env.eventsOf(history.KindFaultEnd)) >= 3 })
	if f := fired(t, env.nem); !slices.Equal(f, []int{1, 1, 1}) {
		t.Fatalf("fired %v, want each trigger once (fault-end never on its own end)", f)
	}
	byTrigger := map[string][]history.Event{}
	for _, e := range env.eventsOf(history.KindFaultStart) {
		byTrigger[e.Trigger] = append(byTrigger[e.Trigger], e)
	}
	if w := byTrigger["write:3"]; len(w) != 1 || w[0].Targets[0] != "c1" {
		t.Fatalf("write:3: %+v", w)
	}
	if s := byTrigger["step:lock-acquired"]; len(s) != 1 || s[0].Targets[0] != "c2" {
		t.Fatalf("step: %+v", s)
	}
	// fault-end fires once (5s cooldown) on the first other fault that ended, never on its own.
	fe := byTrigger["fault-end"]
	if len(fe) != 1 || len(fe[0].Targets) != 1 || fe[0].Targets[0] != fe[0].TriggerNodes[0] {
		t.Fatalf("fault-end: %+v", fe)
	}
	// The schedule's entries are on record before any fired: the checker holds the run to them.
	planned := env.eventsOf(history.KindFaultPlanned)
	if len(planned) != 3 || planned[0].Trigger != "write:3" || planned[0].Count != 1 || planned[2].Trigger != "fault-end" || planned[0].Seq > byTrigger["write:3"][0].Seq {
		t.Fatalf("fault-planned: %+v", planned)
	}
	// A new tenure counts its writes from 1 again; count=1 keeps write:3 from firing twice.
	env.feed(history.KindElected, "c1", func(e *history.Event) { e.Token = 2 })
	write("c1")
	write("c1")
	write("c1")
	if f := fired(t, env.nem); f[0] != 1 {
		t.Fatalf("count=1 exceeded: write:3 fired %d times", f[0])
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestTriggerPendingOrActiveAtTheEndIsHealed(t *testing.T) {
	env, _, done, cancel := startTriggered(t, "probe:on=elected,after=300ms,for=1s; probe:on=campaigning,for=2s", 5*time.Second)
	defer cancel()
	env.feed(history.KindCampaigning, "c3", nil)
	waitFor(t, "the campaigning occurrence", func() bool { return len(env.nem.Active()) == 1 })
	env.feed(history.KindElected, "c2", func(e *history.Event) { e.Token = 3 }) // pending for 300ms
	if f := fired(t, env.nem); !slices.Equal(f, []int{1, 1}) {
		t.Fatalf("fired %v, want the elected occurrence pending and the campaigning one active", f)
	}
	if err := env.nem.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // only ends a hung test
		t.Fatal("Run did not return a minute after HealAll")
	}
	// Run returned after its triggered occurrences' goroutines: the pending one gave up.
	starts, ends := env.eventsOf(history.KindFaultStart), env.eventsOf(history.KindFaultEnd)
	if len(starts) != 1 || len(ends) != 1 || starts[0].Trigger != "campaigning" {
		t.Fatalf("want the active fault started and healed and the pending one never started: starts %+v ends %+v", starts, ends)
	}
	probeMu.Lock()
	defer probeMu.Unlock()
	if len(probeActive) != 0 {
		t.Fatalf("left active: %v", probeActive)
	}
	// After the run, events fire nothing: the plan is disarmed.
	if env.nem.armedTriggers() != nil {
		t.Fatal("triggers still armed after Run returned")
	}
	env.feed(history.KindCampaigning, "c3", nil)
	if n := len(env.eventsOf(history.KindFaultStart)); n != 1 {
		t.Fatalf("a trigger fired after the run: %d", n)
	}
}

func TestTriggerNearThePhaseEndDoesNotFire(t *testing.T) {
	env, _, done, cancel := startTriggered(t, "probe:on=elected,for=400ms", 500*time.Millisecond)
	defer cancel()
	end := env.nem.armedTriggers().end
	waitFor(t, "less than the fault's 400ms left", func() bool { return time.Until(end) < 350*time.Millisecond })
	env.feed(history.KindElected, "c2", func(e *history.Event) { e.Token = 3 })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(env.eventsOf(history.KindFaultStart)); n != 0 {
		t.Fatalf("an occurrence that cannot end inside the fault phase started (%d)", n)
	}
}

func TestTriggerWriteCountsFromTheTenureStartBeforeThePhase(t *testing.T) {
	s, err := Parse("probe:on=write:3,for=50ms")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(1, 2*time.Second, Topology{Candidates: []string{"c1"}, StoreKind: "etcd", TTL: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	env := &loopEnv{fakeEnv: &fakeEnv{t: t}}
	env.nem = New(env, p.Topology)
	write := func() {
		env.feed(history.KindWrite, "c1", func(e *history.Event) { e.Token, e.WriteID, e.CallT, e.Result = 1, "w", e.T, "accepted" })
	}
	// Warmup: elected and two writes before the fault phase.
	env.feed(history.KindElected, "c1", func(e *history.Event) { e.Token = 1 })
	write()
	write()
	done := make(chan error, 1)
	go func() { done <- env.nem.Run(context.Background(), p) }()
	waitFor(t, "Run to arm its triggers", func() bool { return env.nem.armedTriggers() != nil })
	write() // the tenure's third write
	waitFor(t, "write:3", func() bool { return len(env.eventsOf(history.KindFaultStart)) == 1 })
	if err := env.nem.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Event-paced cycles: write:N counts from the last heal, so the second cycle starts on the
// leader's third write after the first one healed, never while it is in effect; a
// fault-start trigger chains a second fault on the first one's start.
func TestTriggerPacedCyclesAndFaultStart(t *testing.T) {
	env, _, done, cancel := startTriggered(t, "probe:on=write:3,for=80ms,count=2; probe:target=trigger,on=fault-start,for=30ms,count=2", 10*time.Second)
	defer cancel()
	writes := 0
	write := func(node string) {
		writes++
		env.feed(history.KindWrite, node, func(e *history.Event) {
			e.Token, e.WriteID, e.CallT, e.Result = 1, fmt.Sprint("w", writes), e.T, "accepted"
		})
	}
	byTrigger := func() map[string][]history.Event {
		out := map[string][]history.Event{}
		for _, e := range env.eventsOf(history.KindFaultStart) {
			out[e.Trigger] = append(out[e.Trigger], e)
		}
		return out
	}
	healed := func(n int) func() bool {
		return func() bool { return len(env.eventsOf(history.KindFaultEnd)) >= n }
	}
	env.feed(history.KindElected, "c1", func(e *history.Event) { e.Token = 1 })
	write("c1")
	write("c1")
	write("c1")
	waitFor(t, "the first cycle and its chained fault", func() bool { return len(byTrigger()["fault-start"]) == 1 })
	if fs := byTrigger()["fault-start"][0]; fs.Targets[0] != "c1" || fs.TriggerNodes[0] != "c1" {
		t.Fatalf("fault-start trigger did not hit the first fault's target: %+v", fs)
	}
	write("c1") // the 4th and 5th writes of the tenure, while the first cycle is in effect
	write("c1")
	waitFor(t, "both faults of the first cycle healed", healed(2))
	if n := len(byTrigger()["write:3"]); n != 1 {
		t.Fatalf("write:3 fired %d times before the heal reset the count", n)
	}
	write("c1")
	write("c1")
	if n := len(byTrigger()["write:3"]); n != 1 {
		t.Fatalf("the second cycle started after only two writes since the heal: %d", n)
	}
	write("c1")
	waitFor(t, "the second cycle", func() bool { return len(byTrigger()["write:3"]) == 2 && len(byTrigger()["fault-start"]) == 2 })
	waitFor(t, "the second cycle healed", healed(4))
	for range 4 {
		write("c1")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(env.eventsOf(history.KindFaultStart)); n != 4 {
		t.Fatalf("count=2 of each should give 4 starts, got %d", n)
	}
}

func TestPacedProfilesPlan(t *testing.T) {
	topo := Topology{Candidates: []string{"c1", "c2", "c3"}, StoreNodes: []string{"etcd-1", "etcd-2", "etcd-3"}, StoreKind: "etcd", TTL: 2 * time.Second}
	for _, p := range Profiles() {
		if p.Paced() == "" {
			continue
		}
		spec, err := PacedSpec(p.Name, 2)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		s, err := Parse(spec)
		if err != nil {
			t.Fatalf("%s: paced form %q: %v", p.Name, spec, err)
		}
		if s.Faults[0].On.Event != EventWrite {
			t.Errorf("%s: a paced form starts on a leader's write, not on %q", p.Name, s.Faults[0].On)
		}
		plan, err := s.Plan(1, time.Minute, topo)
		if err != nil {
			if strings.Contains(err.Error(), "applies to store") || strings.Contains(err.Error(), "not support") {
				continue // a store-specific kind (on etcd: none so far)
			}
			t.Fatalf("%s: %v", p.Name, err)
		}
		total := len(plan.Faults)
		for _, tr := range plan.Triggers {
			if tr.Count != 2 {
				t.Errorf("%s: trigger %s has count %d, want the 2 cycles asked for", p.Name, tr.On, tr.Count)
			}
			total += tr.Count
		}
		if len(plan.Faults) != 0 || total == 0 {
			t.Errorf("%s: paced form has %d time-tabled occurrences and %d triggered", p.Name, len(plan.Faults), total)
		}
	}
	if _, err := PacedSpec("mixed", 1); err == nil || !strings.Contains(err.Error(), "no event-paced form") {
		t.Errorf("mixed: %v", err)
	}
	if _, err := PacedSpec("pause:for=1s", 1); err == nil || !strings.Contains(err.Error(), "not a profile") {
		t.Errorf("a custom spec: %v", err)
	}
	if _, err := PacedSpec("pause-leader", 0); err == nil {
		t.Error("0 cycles accepted")
	}
}

func TestPlannedEntries(t *testing.T) {
	topo := Topology{Candidates: []string{"c1", "c2", "c3"}, StoreKind: "etcd", TTL: time.Second}
	s, err := Parse("pause:for=1s,every=5s; kill:on=write:2,for=1s,every=10s,count=3; pause:on=elected,for=1s")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(3, time.Minute, topo)
	if err != nil {
		t.Fatal(err)
	}
	got := PlannedEntries(p)
	if len(p.Faults) < 2 || len(got) != 3 {
		t.Fatalf("%d occurrences gave entries %+v", len(p.Faults), got)
	}
	want := []struct {
		spec, trigger string
		count         int
	}{{s.Faults[0].String(), "", 1}, {s.Faults[1].String(), "write:2", 3}, {s.Faults[2].String(), "elected", 1}}
	for i, w := range want {
		e := got[i]
		if e.Kind != history.KindFaultPlanned || e.Spec != w.spec || e.Trigger != w.trigger || e.Count != w.count {
			t.Fatalf("entry %d: %+v, want %+v", i, e, w)
		}
	}
}

// A triggered proxy fault (the delay-leader profile's event-paced form) needs the fault
// proxy as much as a time-tabled one: without it the run would fault nothing.
func TestTriggeredProxyFaultNeedsTheProxy(t *testing.T) {
	topo := Topology{Candidates: []string{"c1", "c2", "c3"}, StoreNodes: []string{"redis"}, StoreKind: "redis", TTL: time.Second}
	for _, name := range []string{"delay-leader", "half-open-leader", "reset-leader", "bandwidth-leader", "slow-close-kill-leader"} {
		spec, err := PacedSpec(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Plan(1, time.Minute, topo)
		if err != nil {
			t.Fatal(err)
		}
		if !p.NeedsStoreProxy() {
			t.Errorf("%s paced (%s): the plan says it needs no fault proxy", name, spec)
		}
	}
}
