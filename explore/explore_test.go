package explore

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
	"github.com/splitbrain-chaos/splitbrain/shrink"
)

func TestVocabularyCoversEveryKindTargetAndShape(t *testing.T) {
	v, err := NewVocabulary(nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	atoms := v.Atoms()
	for _, want := range []string{"pause:target=leader", "kill:target=follower", "freeze:target=all-store",
		"clock:target=stale-leader", "partition:shape=halves", "partition:shape=leader-from-store",
		"pause:target=trigger", "kill:target=trigger"} {
		if !slices.Contains(atoms, want) {
			t.Errorf("vocabulary lacks %s", want)
		}
	}
	for _, k := range nemesis.KindNames() {
		if !slices.ContainsFunc(atoms, func(a string) bool { return strings.HasPrefix(a, k+":") }) {
			t.Errorf("kind %s has no atom", k)
		}
	}
	for _, a := range atoms {
		if strings.Contains(a, "node:") {
			t.Errorf("atom %s names a node; targets are drawn by role", a)
		}
	}
}

func TestNarrowedVocabulary(t *testing.T) {
	v, err := NewVocabulary([]string{"pause:target=leader", "partition"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := v.Atoms()
	if got[0] != "pause:target=leader" || len(got) != 1+len(nemesis.Shapes()) {
		t.Fatalf("atoms %v, want pause:target=leader and every partition shape", got)
	}
	for _, c := range []struct{ in, want string }{
		{"latency", "not offered here"},
		{"bogus", `unknown fault kind "bogus"`},
		{"pause:target=nowhere", "pause takes: pause:target=leader"},
	} {
		_, err := NewVocabulary([]string{c.in}, 2)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.in, err, c.want)
		}
	}
	if _, err := NewVocabulary(nil, 0); err == nil {
		t.Error("0 faults per schedule accepted")
	}
}

// Every drawn schedule must be a spec the nemesis parses, whose faults fit the faults phase;
// most must be runnable on a store with every target class.
func TestDrawnSchedulesParseFitAndMostlyRun(t *testing.T) {
	v, err := NewVocabulary(nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	v = v.WithSteps([]string{"lock-acquired"}) // etcd-election's declared step
	base := harness.Config{Store: "etcd", Recipe: "etcd-election", Nodes: 3, TTL: 2 * time.Second,
		FaultTime: 20 * time.Second, Warmup: 5 * time.Second, Recovery: 5 * time.Second,
		WriteInterval: 50 * time.Millisecond, Workload: harness.DefaultWorkload, ResourceMode: harness.DefaultResourceMode}
	rng := rand.New(rand.NewPCG(7, 0))
	accepted, onStep, triggered := 0, 0, 0
	const draws = 300
	for range draws {
		spec := v.Draw(rng, base.TTL, base.FaultTime)
		if strings.Contains(spec, "on=") {
			triggered++
		}
		if strings.Contains(spec, "on=step:lock-acquired") {
			onStep++
		}
		s, err := nemesis.Parse(spec)
		if err != nil {
			t.Fatalf("drawn %q does not parse: %v", spec, err)
		}
		if n := len(s.Faults); n < 1 || n > 3 {
			t.Fatalf("drawn %q has %d faults, want 1..3", spec, n)
		}
		for _, f := range s.Faults {
			if d := f.For.Resolve(base.TTL); d <= 0 || d >= base.FaultTime {
				t.Fatalf("drawn %q holds a fault %v in a %v phase", spec, d, base.FaultTime)
			}
		}
		cfg := base
		cfg.Nemesis, cfg.Seed = spec, 1
		if harness.CheckConfig(&cfg) == nil {
			accepted++
		}
	}
	t.Logf("%d of %d drawn schedules run on etcd; %d have a triggered fault, %d on the recipe's step", accepted, draws, triggered, onStep)
	if triggered == 0 || onStep == 0 {
		t.Fatal("no drawn schedule starts a fault on an event, or none on the recipe's step")
	}
	if accepted < draws*6/10 {
		t.Fatalf("only %d of %d drawn schedules run on etcd", accepted, draws)
	}
	// The same seed draws the same schedules.
	a, b := rand.New(rand.NewPCG(3, 0)), rand.New(rand.NewPCG(3, 0))
	for range 20 {
		if x, y := v.Draw(a, base.TTL, base.FaultTime), v.Draw(b, base.TTL, base.FaultTime); x != y {
			t.Fatalf("same seed drew %q and %q", x, y)
		}
	}
}

// A vocabulary the store refuses every draw of ends with a message naming the real flag.
func TestRefusedVocabularyNamesFaultsFlag(t *testing.T) {
	v, err := NewVocabulary([]string{"evict"}, 1)
	if err != nil {
		t.Fatalf("evict is not in the vocabulary: %v", err)
	}
	opt := Options{Vocabulary: v, Base: harness.Config{Store: "redis", Recipe: "redis-setnx", FaultTime: 10 * time.Second, TTL: 2 * time.Second}}
	refused := 0
	_, _, err = drawRunnable(rand.New(rand.NewPCG(1, 2)), opt, 1, &refused)
	if err == nil || !strings.Contains(err.Error(), "narrow --faults") || refused != maxRefusals {
		t.Fatalf("evict on redis: %v (%d refused), want the refusal naming --faults", err, refused)
	}
}

// A line that reproduces in fewer than 8 runs of 10 is a race; an unmeasured one is not.
func TestRaceBelowEightInTen(t *testing.T) {
	for _, tc := range []struct {
		ok, of int
		race   bool
	}{{4, 5, false}, {3, 5, true}, {8, 10, false}, {7, 10, true}, {0, 0, false}, {0, 3, true}} {
		m := Minimized{Reproduced: tc.ok, Repro: make([]shrink.Outcome, tc.of)}
		if m.Race() != tc.race {
			t.Errorf("%d of %d: race %v, want %v", tc.ok, tc.of, m.Race(), tc.race)
		}
	}
}

// A reproduction run that could not run (a harness error: a line the nemesis refuses) is
// neither a reproduction nor a miss: it is left out of the rate, and a line none of whose
// runs ran is not a race (issue 48: two refused lines were printed "a race: 0/5").
func TestReproRateLeavesOutRunsThatCouldNotRun(t *testing.T) {
	broken := Minimized{Repro: []shrink.Outcome{{Err: "refused"}, {Err: "refused"}, {Err: "refused"}}}
	if broken.Race() || !broken.NotRunnable() {
		t.Errorf("a line that never ran: race %v, not runnable %v; want no race, not runnable", broken.Race(), broken.NotRunnable())
	}
	if got := broken.Rate(); got != "0/0, 3 of 3 runs could not run" {
		t.Errorf("rate %q", got)
	}
	mixed := Minimized{Reproduced: 4, Repro: []shrink.Outcome{{Failed: true}, {Failed: true}, {Failed: true}, {Failed: true}, {Err: "engine"}}}
	if mixed.Race() || mixed.NotRunnable() || mixed.Rate() != "4/4 (100%), 1 of 5 runs could not run" {
		t.Errorf("4 of 4 that ran, 1 error: race %v, rate %q", mixed.Race(), mixed.Rate())
	}
	race := Minimized{Reproduced: 3, Repro: []shrink.Outcome{{Failed: true}, {Failed: true}, {Failed: true}, {}, {}}}
	if !race.Race() || race.Rate() != "3/5 (60%)" {
		t.Errorf("3 of 5: race %v, rate %q", race.Race(), race.Rate())
	}
}

// A find's class is read from its schedule; the shrink's last failing run tells what the bug
// needs. A clock-step find whose shrunk schedule no longer steps a clock and still fails is
// the candidate's own logic, and says so (issue 48: zk-suspended, seed 1).
func TestShrinkReclassifiesAFindWhoseFaultWasDropped(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, harness.ResultsFile), []byte(`{"schema":1,"verdict":"invalid","reasons":[{"code":"stale-write-accepted","severity":"invalid"}],
"cause":{"class":"own-logic","evidence":"no store crash, eviction, clock step or lying fence came before the first violation at +8.8s","key":"own-logic|stale-write-accepted"}}`), 0o644)
	c := causeOf(dir)
	if c == nil || c.Class != checkers.CauseOwnLogic {
		t.Fatalf("cause of the shrunk run: %+v", c)
	}
	m := Minimized{Cause: c}
	if !m.Reclassified(&checkers.Cause{Class: checkers.CauseClockStep}) {
		t.Error("a clock-step find whose shrunk run is own-logic was not reclassified")
	}
	if m.Reclassified(&checkers.Cause{Class: checkers.CauseOwnLogic}) || (Minimized{}).Reclassified(&checkers.Cause{Class: checkers.CauseClockStep}) {
		t.Error("reclassified with the same class, or with no shrunk run")
	}
	// The find's own run showed it without a clock step before it: a shrunk run that
	// stepped one first does not make it a clock-step find.
	if (Minimized{Cause: &checkers.Cause{Class: checkers.CauseClockStep}}).Reclassified(&checkers.Cause{Class: checkers.CauseOwnLogic}) {
		t.Error("an own-logic find was re-classed clock-step by its shrunk run")
	}
	if !(Minimized{Cause: &checkers.Cause{Class: checkers.CauseClockStep}}).Reclassified(&checkers.Cause{Class: checkers.CauseStoreAmnesia}) {
		t.Error("a store-amnesia find whose shrunk run failed with a clock step and no store crash before it kept its class")
	}
	if causeOf(t.TempDir()) != nil {
		t.Error("a directory without results has a cause")
	}
}

// TestRegroupMergesAFindReclassedByItsShrink: a clock-step find whose shrink read own-logic
// is the search's own-logic find again (one cause class and an invalid code in common); a
// find re-classed to a class no other find has stays distinct.
func TestRegroupMergesAFindReclassedByItsShrink(t *testing.T) {
	codes := "fenced-register-illegal,interleaving,stale-write-accepted"
	res := Result{Finds: []Try{
		{N: 3, Cause: &checkers.Cause{Class: checkers.CauseClockStep, Key: checkers.CauseClockStep + "|" + codes}},
		{N: 4, Cause: &checkers.Cause{Class: checkers.CauseOwnLogic, Key: checkers.CauseOwnLogic + "|" + codes}},
		{N: 7, Cause: &checkers.Cause{Class: checkers.CauseStoreAmnesia, Key: checkers.CauseStoreAmnesia + "|token-duplicate"}},
	}}
	ownLogic := &checkers.Cause{Class: checkers.CauseOwnLogic, Key: checkers.CauseOwnLogic + "|stale-write-accepted"}
	if j := res.Regroup(0, ownLogic); j != 1 {
		t.Errorf("the re-classed clock-step find is find %d, want 1 (the own-logic find)", j)
	}
	if res.Finds[0].Cause.Class != checkers.CauseOwnLogic {
		t.Errorf("the re-classed find kept class %s", res.Finds[0].Cause.Class)
	}
	if j := res.Regroup(2, &checkers.Cause{Class: checkers.CauseStoreAmnesia, Key: checkers.CauseStoreAmnesia + "|token-duplicate"}); j != -1 {
		t.Errorf("a find whose class the shrink kept was merged into find %d", j)
	}
	if j := res.Regroup(1, nil); j != -1 {
		t.Errorf("a find without a cause after its shrink was merged into find %d", j)
	}
	lone := Result{Finds: []Try{{N: 2, Cause: &checkers.Cause{Class: checkers.CauseClockStep, Key: checkers.CauseClockStep + "|" + codes}}}}
	if j := lone.Regroup(0, ownLogic); j != -1 {
		t.Errorf("a lone find was merged into find %d (itself?)", j)
	}
}
