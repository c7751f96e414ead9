package checkers

import (
	"context"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// guarded: c1 leads and writes throughout; one pause fault per (start, end) pair on c2.
func guarded(faults [][2]int64, faultErr string, extra func(h *hb)) *hb {
	h := newHB()
	h.phase(2, history.PhaseWarmup).campaign(5, "c1").elected(10, "c1", 1)
	h.writes(10, 2000, "c1", 1)
	h.phase(400, history.PhaseFaults)
	for i, f := range faults {
		h.add(history.Event{T: f[0] * ms, Kind: history.KindFaultStart, FaultID: i + 1, Fault: "pause", Targets: []string{"c2"}, Err: faultErr})
		h.heal(f[1], i+1)
	}
	if extra != nil {
		extra(h)
	}
	h.phase(2050, history.PhaseTeardown)
	return h.end(2100)
}

func TestValidityGuards(t *testing.T) {
	wantVerdict(t, check(t, guarded([][2]int64{{500, 900}}, "", nil), Params{}), Valid)

	// No planned fault took effect: unknown; one failed among applied ones: a finding.
	none := check(t, guarded([][2]int64{{500, 501}, {900, 901}}, "host pid: permission denied", nil), Params{})
	wantVerdict(t, none, Unknown)
	if codes(none.Reasons)["nothing-faulted"] != 1 {
		t.Fatalf("%+v", none.Reasons)
	}
	one := check(t, guarded([][2]int64{{500, 900}}, "", func(h *hb) {
		h.add(history.Event{T: 1000 * ms, Kind: history.KindFaultStart, FaultID: 9, Fault: "pause", Targets: []string{"c3"}, Err: "no such process"})
		h.heal(1001, 9)
	}), Params{})
	wantVerdict(t, one, Valid)
	if codes(one.Findings)["fault-not-applied"] != 1 {
		t.Fatalf("%+v", one.Findings)
	}

	// Too little activity: the faults cover every accepted write before or after them.
	early := check(t, guarded([][2]int64{{5, 900}}, "", nil), Params{})
	late := check(t, guarded([][2]int64{{500, 2040}}, "", nil), Params{})
	for _, r := range []*Results{early, late} {
		wantVerdict(t, r, Unknown)
		if codes(r.Reasons)["too-little-activity"] != 1 {
			t.Fatalf("%+v", r.Reasons)
		}
	}

	// A store node that exits outside any fault targeting it: node-lost; inside one, fine;
	// during teardown, fine.
	exit := func(at int64, node string) func(h *hb) {
		return func(h *hb) {
			h.add(history.Event{T: at * ms, Kind: history.KindNodeExit, Node: node, Reason: "exit 137"})
		}
	}
	lost := check(t, guarded([][2]int64{{500, 900}}, "", exit(1200, "etcd-1")), Params{})
	wantVerdict(t, lost, Unknown)
	if r := lost.Reasons; len(r) != 1 || r[0].Code != "node-lost" || r[0].Nodes[0] != "etcd-1" || r[0].T != 1200*ms {
		t.Fatalf("%+v", r)
	}
	wantVerdict(t, check(t, guarded([][2]int64{{500, 900}}, "", exit(700, "c2")), Params{}), Valid)
	wantVerdict(t, check(t, guarded([][2]int64{{500, 900}}, "", exit(2060, "etcd-1")), Params{}), Valid)

	// Harness errors recorded as they happened.
	herr := func(phase string) func(h *hb) {
		return func(h *hb) {
			h.add(history.Event{T: 1500 * ms, Kind: history.KindHarnessError, Phase: phase, Reason: "boom"})
		}
	}
	if r := check(t, guarded([][2]int64{{500, 900}}, "", herr(history.PhaseHeal)), Params{}); codes(r.Reasons)["heal-failed"] != 1 {
		t.Fatalf("%+v", r.Reasons)
	}
	if r := check(t, guarded([][2]int64{{500, 900}}, "", herr(history.PhaseFaults)), Params{}); codes(r.Reasons)["harness-error"] != 1 {
		t.Fatalf("%+v", r.Reasons)
	}
	if r := check(t, guarded([][2]int64{{500, 900}}, "", herr(history.PhaseTeardown)), Params{}); r.Verdict != Valid || codes(r.Findings)["teardown-problem"] != 1 {
		t.Fatalf("%+v %+v", r.Reasons, r.Findings)
	}

	// A guard never turns invalid into anything else.
	bad := guarded([][2]int64{{5, 2040}}, "", func(h *hb) {
		h.add(history.Event{T: 1300 * ms, Kind: history.KindDecision, Node: "c9", Token: 0, WriteID: "stale", Result: history.ResultAccepted, Max: 1, Stale: true, Mode: ModeFenced})
	})
	h := bad
	h.ev[len(h.ev)-1].Reason = "cancelled: interrupt"
	r := check(t, h, Params{})
	wantVerdict(t, r, Invalid)
	if c := codes(r.Reasons); c["stale-write-accepted"] != 1 || c["run-incomplete"] != 1 || c["too-little-activity"] != 2 {
		t.Fatalf("%+v", r.Reasons)
	}
}

// A checker that panics gives an unknown reason naming it; the others still run.
func TestCheckerPanicIsUnknown(t *testing.T) {
	boom := checkerFunc{"boom", func(context.Context, *analysis, *Results, *reasonList) { panic("index out of range") }}
	list := append([]checker{boom}, checkerList...)
	r, err := checkWith(context.Background(), list, guarded([][2]int64{{500, 900}}, "", nil).ev, Params{})
	if err != nil {
		t.Fatal(err)
	}
	wantVerdict(t, r, Unknown)
	if len(r.Reasons) != 1 || r.Reasons[0].Checker != "boom" || r.Reasons[0].Code != "checker-panic" {
		t.Fatalf("%+v", r.Reasons)
	}
	if r.Tenures.Elections != 1 || r.Resource.Accepted == 0 {
		t.Fatal("the other checkers did not run")
	}
}

// The schedule's entries (fault-planned) hold the run to what it planned: a trigger that never
// fired, or fired fewer times than its count=, leaves the run unknown, naming the fault.
func TestValidityPlannedTriggers(t *testing.T) {
	const pauseSpec = "pause:at=100ms,for=400ms"
	const trigSpec = "pause:target=leader,on=elected,after=30ms,for=3xTTL"
	planned := func(spec, trigger string, count int) func(h *hb) {
		return func(h *hb) {
			h.add(history.Event{T: 401 * ms, Kind: history.KindFaultPlanned, Fault: "pause", Spec: spec, Trigger: trigger, Count: count})
		}
	}
	// Only the trigger was planned, and it never fired: no fault-start at all.
	never := newHB()
	never.phase(2, history.PhaseWarmup).campaign(5, "c1").elected(10, "c1", 1)
	never.writes(10, 2000, "c1", 1)
	never.phase(400, history.PhaseFaults)
	planned(trigSpec, "elected", 1)(never)
	never.phase(2050, history.PhaseTeardown)
	r := check(t, never.end(2100), Params{})
	wantVerdict(t, r, Unknown)
	if codes(r.Reasons)["nothing-faulted"] != 1 || !strings.Contains(r.Reasons[0].Message, trigSpec) || !strings.Contains(r.Reasons[0].Message, "never fired") {
		t.Fatalf("a trigger that never fired: %+v", r.Reasons)
	}

	// A time-tabled fault took effect, a trigger with count=2 fired once: unknown fault-missing.
	withTrig := func(fired int, count int) *Results {
		return check(t, guarded(nil, "", func(h *hb) {
			planned(pauseSpec, "", 1)(h)
			planned(trigSpec, "elected", count)(h)
			h.add(history.Event{T: 500 * ms, Kind: history.KindFaultStart, FaultID: 1, Fault: "pause", Targets: []string{"c2"}, Spec: pauseSpec})
			h.heal(900, 1)
			for i := range fired {
				id := 2 + i
				h.add(history.Event{T: int64(1000+100*i) * ms, Kind: history.KindFaultStart, FaultID: id, Fault: "pause", Targets: []string{"c1"}, Spec: trigSpec, Trigger: "elected", TriggerNodes: []string{"c1"}, TriggerT: 990 * ms})
				h.heal(int64(1050+100*i), id)
			}
		}), Params{})
	}
	short := withTrig(1, 2)
	wantVerdict(t, short, Unknown)
	if c := codes(short.Reasons); c["fault-missing"] != 1 || c["nothing-faulted"] != 0 || !strings.Contains(short.Reasons[0].Message, "1 of the 2") {
		t.Fatalf("a trigger short of its count: %+v", short.Reasons)
	}
	wantVerdict(t, withTrig(2, 2), Valid)
	wantVerdict(t, withTrig(3, 1), Valid) // no count= plans it once: more firings are fine

	// A time-tabled entry none of whose occurrences took effect, beside one that did.
	missing := check(t, guarded([][2]int64{{500, 900}}, "", func(h *hb) {
		planned("pause", "", 1)(h) // guarded's faults carry no spec: their kind stands in
		planned("kill:target=store-leader,at=1s", "", 1)(h)
		h.add(history.Event{T: 1000 * ms, Kind: history.KindFaultStart, FaultID: 2, Fault: "kill", Spec: "kill:target=store-leader,at=1s", Err: "the store reports no leader right now"})
		h.heal(1001, 2)
	}), Params{})
	wantVerdict(t, missing, Unknown)
	if codes(missing.Reasons)["fault-missing"] != 1 {
		t.Fatalf("a time-tabled entry that never took effect: %+v", missing.Reasons)
	}
}
