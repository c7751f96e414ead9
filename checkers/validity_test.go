package checkers

import (
	"context"
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
