package checkers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

func TestParseGoal(t *testing.T) {
	ok := map[string]Goal{
		"":                           {Writes: DefaultGoalWrites},
		"faults":                     {Writes: DefaultGoalWrites},
		"writes=5":                   {Writes: 5},
		"elections=20, writes=1":     {Writes: 1, Elections: 20},
		"faults,handoffs=4":          {Writes: DefaultGoalWrites, Handoffs: 4},
		"writes=0,elections=0":       {},
		"handoffs=2,elections=3":     {Writes: DefaultGoalWrites, Elections: 3, Handoffs: 2},
		" writes = 2 , faults":       {Writes: 2},
		"elections=100000":           {Writes: DefaultGoalWrites, Elections: 100000},
		"writes=3,handoffs=1,faults": {Writes: 3, Handoffs: 1},
		"faults,stall=6s":            {Writes: DefaultGoalWrites, Stall: 6 * time.Second},
		"faults,settle=2s,stall=6s":  {Writes: DefaultGoalWrites, Settle: 2 * time.Second, Stall: 6 * time.Second},
		"writes=3,renewed=1":         {Writes: 3, Renewed: 1},
	}
	for in, want := range ok {
		g, err := ParseGoal(in)
		if err != nil || g != want {
			t.Errorf("ParseGoal(%q) = %+v, %v; want %+v", in, g, err, want)
		}
	}
	for in, want := range map[string]string{
		"writes":              "not key=value",
		"writes=-1":           "whole number",
		"writes=1e9":          "whole number",
		"elections=100001":    "whole number",
		"leaders=3":           "unknown condition",
		"writes=1,writes=2":   "given twice",
		"stall=0s":            "positive duration",
		"stall=soon":          "positive duration",
		"stall=1s,stall=2s":   "given twice",
		"settle=-1s":          "positive duration",
		"renewed=-1":          "whole number",
		"renewed=1,renewed=1": "given twice",
	} {
		if _, err := ParseGoal(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseGoal(%q): %v, want an error with %q", in, err, want)
		}
	}
}

func TestGoalTrackerMetOnce(t *testing.T) {
	ev := func(src history.Source, kind history.Kind, mod func(*history.Event)) history.Event {
		e := history.Event{Source: src, Kind: kind}
		if mod != nil {
			mod(&e)
		}
		return e
	}
	accepted := ev(history.SourceResource, history.KindDecision, func(e *history.Event) { e.Result = history.ResultAccepted })
	tr := NewGoalTracker(Goal{Faults: 1, Writes: 2})
	seq := []history.Event{
		accepted, accepted, accepted, // before the phase: not counted
		ev(history.SourceHarness, history.KindPhase, func(e *history.Event) { e.Phase = history.PhaseFaults }),
		accepted, accepted, // no fault yet
		ev(history.SourceNemesis, history.KindFaultStart, func(e *history.Event) { e.FaultID = 1 }),
		accepted, accepted, // while the fault is in effect: not a leader back
		ev(history.SourceNemesis, history.KindFaultEnd, func(e *history.Event) { e.FaultID = 1 }),
		accepted,
	}
	for i, e := range seq {
		if tr.Observe(e) {
			t.Fatalf("met at event %d (%s), before two writes after the heal", i, e.Kind)
		}
	}
	if !strings.Contains(tr.Missing(), "1 of 2 write(s)") {
		t.Fatalf("missing: %q", tr.Missing())
	}
	if !tr.Observe(accepted) || !tr.Met() {
		t.Fatal("not met after the second write after the heal")
	}
	if tr.Observe(accepted) {
		t.Fatal("met twice")
	}
	// A fault that failed to apply does not count as run.
	tr = NewGoalTracker(Goal{Faults: 1})
	tr.Observe(ev(history.SourceHarness, history.KindPhase, func(e *history.Event) { e.Phase = history.PhaseFaults }))
	tr.Observe(ev(history.SourceNemesis, history.KindFaultStart, func(e *history.Event) { e.FaultID = 1; e.Err = "no such process" }))
	if tr.Observe(ev(history.SourceNemesis, history.KindFaultEnd, func(e *history.Event) { e.FaultID = 1 })) || tr.Met() {
		t.Fatal("a fault that never took effect met the goal")
	}
	// The phase's end freezes the count: writes in recovery do not meet it late.
	tr = NewGoalTracker(Goal{Writes: 1})
	tr.Observe(ev(history.SourceHarness, history.KindPhase, func(e *history.Event) { e.Phase = history.PhaseFaults }))
	tr.Observe(ev(history.SourceNemesis, history.KindFaultStart, func(e *history.Event) { e.FaultID = 1 }))
	tr.Observe(ev(history.SourceHarness, history.KindPhase, func(e *history.Event) { e.Phase = history.PhaseHeal }))
	tr.Observe(ev(history.SourceNemesis, history.KindFaultEnd, func(e *history.Event) { e.FaultID = 1 }))
	if tr.Observe(accepted) || tr.Met() {
		t.Fatal("met after the faults phase ended")
	}
}

// paced is a history in arrival order (as the harness records it): c1 leads and writes, one
// pause on c2 from 500 to 900 ms inside the faults phase.
func paced() *hb {
	h := newHB()
	h.phase(2, history.PhaseWarmup).campaign(5, "c1").elected(10, "c1", 1)
	h.writes(10, 400, "c1", 1)
	h.phase(400, history.PhaseFaults)
	h.writes(400, 500, "c1", 1)
	h.fault(500, 1, "pause", "c2")
	h.writes(500, 900, "c1", 1)
	h.heal(900, 1)
	h.writes(900, 1200, "c1", 1)
	h.phase(1200, history.PhaseHeal).phase(1201, history.PhaseRecovery)
	h.writes(1201, 2000, "c1", 1)
	h.phase(2050, history.PhaseTeardown)
	return h.end(2100)
}

func TestGoalNotMetIsUnknown(t *testing.T) {
	met := check(t, paced(), Params{Goal: &Goal{Faults: 1, Writes: 3}})
	wantVerdict(t, met, Valid)
	for _, g := range []Goal{{Faults: 2, Writes: 3}, {Faults: 1, Writes: 3, Elections: 4}, {Faults: 1, Handoffs: 1}, {Faults: 1, Writes: 7}} {
		r := check(t, paced(), Params{Goal: &g})
		wantVerdict(t, r, Unknown)
		if codes(r.Reasons)["goal-not-met"] != 1 {
			t.Fatalf("goal %+v: %+v", g, r.Reasons)
		}
	}
	// Without a goal the same run is judged as before.
	wantVerdict(t, check(t, paced(), Params{}), Valid)
}

// A stall ends the phase once faults ran and healed, a leader is back and no fault moved
// for Stall; it is not the goal met, and the checker makes the run unknown all the same.
func TestGoalStall(t *testing.T) {
	tr := NewGoalTracker(Goal{Faults: 2, Writes: 1, Stall: 50})
	for _, e := range []history.Event{
		{Source: history.SourceHarness, Kind: history.KindPhase, Phase: history.PhaseFaults, T: 1},
		acceptedAt(5), acceptedAt(70), // no fault ran yet: nothing stalled, the first link waits on a write
		{Source: history.SourceNemesis, Kind: history.KindFaultStart, FaultID: 1, T: 100},
		acceptedAt(160), // in effect: not stalled
		{Source: history.SourceNemesis, Kind: history.KindFaultEnd, FaultID: 1, T: 200},
		acceptedAt(210), acceptedAt(249),
	} {
		if tr.Observe(e) {
			t.Fatalf("ended at %+v", e)
		}
	}
	if !tr.Observe(acceptedAt(250)) || !tr.Stalled() || tr.Met() {
		t.Fatalf("not stalled 50 after the heal: stalled %v, met %v", tr.Stalled(), tr.Met())
	}
	if tr.Observe(acceptedAt(400)) {
		t.Fatal("ended twice")
	}
	g := Goal{Faults: 2, Writes: 3, Stall: 100 * time.Millisecond}
	r := check(t, paced(), Params{Goal: &g})
	wantVerdict(t, r, Unknown)
	if c := codes(r.Reasons); c["goal-not-met"] != 1 || !strings.Contains(fmt.Sprint(r.Reasons), "stalled") {
		t.Fatalf("stalled run: %+v", r.Reasons)
	}
}

// Settle holds a met goal until the time has passed since the last fault moved: a fault's
// consequences for a lease come up to a TTL after its heal.
func TestGoalSettle(t *testing.T) {
	tr := NewGoalTracker(Goal{Faults: 1, Writes: 1, Settle: 100})
	for _, e := range []history.Event{
		{Source: history.SourceHarness, Kind: history.KindPhase, Phase: history.PhaseFaults, T: 1},
		{Source: history.SourceNemesis, Kind: history.KindFaultStart, FaultID: 1, T: 10},
		{Source: history.SourceNemesis, Kind: history.KindFaultEnd, FaultID: 1, T: 20},
		acceptedAt(25), acceptedAt(119),
	} {
		if tr.Observe(e) {
			t.Fatalf("met at %+v, before 100 after the heal", e)
		}
	}
	if !tr.Observe(acceptedAt(120)) || !tr.Met() {
		t.Fatal("not met 100 after the heal")
	}
}

// acceptedAt is a write the resource accepted at time at.
func acceptedAt(at int64) history.Event {
	return history.Event{Source: history.SourceResource, Kind: history.KindDecision, Result: history.ResultAccepted, T: at}
}

// A counted fault that could not be applied ("OCI runtime pause failed") uses up its
// occurrence, so the goal can never be met: the phase ends at once instead of waiting out
// its timeout (issue 48: 30 s), and the run is unknown naming the fault.
func TestGoalEndsWhenAFaultCannotApply(t *testing.T) {
	tr := NewGoalTracker(Goal{Faults: 2, Writes: 1})
	for _, e := range []history.Event{
		{Source: history.SourceHarness, Kind: history.KindPhase, Phase: history.PhaseFaults, T: 1},
		acceptedAt(5),
		{Source: history.SourceNemesis, Kind: history.KindFaultStart, FaultID: 1, T: 100},
		{Source: history.SourceNemesis, Kind: history.KindFaultStart, FaultID: 2, Fault: "pause", Err: "OCI runtime pause failed", T: 110},
	} {
		if tr.Observe(e) {
			t.Fatalf("ended at %+v while fault 1 is in effect", e)
		}
	}
	if !tr.Observe(history.Event{Source: history.SourceNemesis, Kind: history.KindFaultEnd, FaultID: 1, T: 200}) || tr.Met() {
		t.Fatalf("fault 2 failed and fault 1 healed: the phase should end, unmet (met %v)", tr.Met())
	}
	if f := tr.Failed(); len(f) != 1 || !strings.Contains(f[0], "fault 2 (pause) could not be applied: OCI runtime pause failed") {
		t.Fatalf("failed %q", f)
	}
}

// renewed= waits for a leader the store granted after the heal, not for the old leader
// re-asserting its grant on reconnect (CURATOR-696: the latch's old node, restored from disk,
// is found lowest again at once; the new grant comes when the restored sessions expire).
func TestGoalRenewed(t *testing.T) {
	elected := func(at, token int64) history.Event {
		return history.Event{Source: history.SourceCandidate, Kind: history.KindElected, Token: token, T: at}
	}
	tr := NewGoalTracker(Goal{Faults: 1, Writes: 2, Renewed: 1})
	for _, e := range []history.Event{
		elected(1, 7), // warmup's leader: granted before any fault
		{Source: history.SourceHarness, Kind: history.KindPhase, Phase: history.PhaseFaults, T: 2},
		acceptedAt(3),
		{Source: history.SourceNemesis, Kind: history.KindFaultStart, FaultID: 1, T: 10},
		elected(15, 9), // elected while the fault is in effect: before the heal
		{Source: history.SourceNemesis, Kind: history.KindFaultEnd, FaultID: 1, T: 20},
		elected(30, 9), acceptedAt(31), acceptedAt(32), acceptedAt(33), // re-asserted, not granted anew
		elected(40, 8), acceptedAt(41), // an older grant is not anew either
		elected(50, 12), acceptedAt(51), // granted anew; writes count from here
	} {
		if tr.Observe(e) {
			t.Fatalf("met at %+v", e)
		}
	}
	if m := tr.Missing(); m != "1 of 2 write(s) accepted after the last heal" {
		t.Fatalf("missing: %q", m)
	}
	if !tr.Observe(acceptedAt(52)) || !tr.Met() {
		t.Fatalf("not met after two writes following the new grant: %s", tr.Missing())
	}
	// A recipe without tokens never meets it, and the run says why.
	tr = NewGoalTracker(Goal{Faults: 1, Writes: 1, Renewed: 1})
	for _, e := range []history.Event{
		{Source: history.SourceHarness, Kind: history.KindPhase, Phase: history.PhaseFaults, T: 2},
		{Source: history.SourceNemesis, Kind: history.KindFaultStart, FaultID: 1, T: 10},
		{Source: history.SourceNemesis, Kind: history.KindFaultEnd, FaultID: 1, T: 20},
		elected(30, 0), acceptedAt(31), acceptedAt(32),
	} {
		if tr.Observe(e) {
			t.Fatalf("met at %+v without a token", e)
		}
	}
	if m := tr.Missing(); !strings.Contains(m, "0 of 1 leader(s) granted anew after the last heal") {
		t.Fatalf("missing: %q", m)
	}
}
