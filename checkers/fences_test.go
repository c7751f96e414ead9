package checkers

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/history"
)

func (h *hb) proc(t int64, kind history.Kind, n string) *hb {
	return h.add(history.Event{T: t * ms, Kind: kind, Node: n})
}

func (h *hb) fence(t int64, id int, by, action, target string) *hb {
	return h.add(history.Event{T: t * ms, Kind: history.KindFenceRequest, FenceID: id, Node: by, Action: action, Target: target})
}

func (h *hb) fenceReply(t int64, id int, by, action, target, result, power string) *hb {
	return h.add(history.Event{T: t * ms, Kind: history.KindFenceReply, FenceID: id, Node: by, Action: action, Target: target, Result: result, Power: power})
}

func fenceCodes(r *Results) []string {
	var out []string
	for _, f := range r.Findings {
		if f.Checker == "fences" {
			out = append(out, f.Code)
		}
	}
	slices.Sort(out)
	return out
}

func TestFencesPairsRequestsAnswersAndExits(t *testing.T) {
	h := newHB()
	for _, n := range []string{"c1", "c2", "c3"} {
		h.proc(2, history.KindProcessStart, n)
	}
	// 1: confirmed off (c2 died before the answer); 2: acknowledged while c3 still ran
	// (a lying device); 3: dropped (unreachable); 4: c3 was already down.
	h.fence(10, 1, "c1", "off", "c2").proc(11, history.KindProcessExit, "c2").fenceReply(12, 1, "c1", "off", "c2", history.FenceDone, "off")
	h.fence(20, 2, "c1", "off", "c3").fenceReply(21, 2, "c1", "off", "c3", history.FenceAcknowledged, "off")
	h.add(history.Event{T: 30 * ms, Kind: history.KindSignal, Node: "c3", Signal: "SIGKILL", Reason: "fence 2: power off requested by c1"}).proc(31, history.KindProcessExit, "c3")
	h.fence(40, 3, "c1", "off", "c2").fenceReply(40, 3, "c1", "off", "c2", history.FenceDropped, "")
	h.fence(50, 4, "c1", "off", "c3").fenceReply(51, 4, "c1", "off", "c3", history.FenceDone, "off")
	h.end(60)
	r, err := Check(context.Background(), h.ev, Params{})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Fences
	if len(f.Ops) != 4 || f.OffsConfirmed != 2 || f.OffsUnconfirmed != 1 || f.OffsAcknowledgedAlive != 1 {
		t.Fatalf("fences %+v: want 4 ops, 2 confirmed, 1 unconfirmed, 1 acknowledged alive", f)
	}
	if op := f.Ops[1]; !op.AliveAtAnswer || op.DeathT != 30*ms {
		t.Errorf("lying op %+v: want alive at the answer, death at 30ms", op)
	}
	if op := f.Ops[3]; op.AliveAtAnswer || op.DeathT != 31*ms {
		t.Errorf("off of a node already down %+v: want its earlier exit as death, not alive", op)
	}
	if got, want := fenceCodes(r), []string{"fence-acknowledged-alive", "fence-not-confirmed"}; !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	if r.Verdict == Invalid {
		t.Errorf("fence findings alone made the run invalid: %+v", r.Reasons)
	}
}

// A power-off's death_t is a death the request caused: a dropped request, or a lie whose
// late power-off never came, gets none, though the process ended later (a kill fault, the
// teardown); the process's later end is named in the finding, not taken as the fence's.
func TestFenceDeathOnlyWhenTheRequestCausedIt(t *testing.T) {
	h := newHB()
	for _, n := range []string{"c1", "c2", "c3"} {
		h.proc(2, history.KindProcessStart, n)
	}
	h.fence(10, 1, "c1", "off", "c2").fenceReply(10, 1, "c1", "off", "c2", history.FenceDropped, "")
	h.fence(20, 2, "c1", "off", "c3").fenceReply(21, 2, "c1", "off", "c3", history.FenceAcknowledged, "off")
	h.add(history.Event{T: 50 * ms, Kind: history.KindPhase, Phase: "teardown"})
	h.proc(55, history.KindProcessExit, "c2").proc(56, history.KindProcessExit, "c3")
	h.end(60)
	r, err := Check(context.Background(), h.ev, Params{})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range r.Fences.Ops {
		if op.DeathT != 0 {
			t.Errorf("op %+v: the teardown's exit taken as the death the request caused", op)
		}
	}
	if op := r.Fences.Ops[1]; !op.AliveAtAnswer {
		t.Errorf("lie %+v: want alive at the answer", op)
	}
	for _, f := range r.Findings {
		if f.Code == "fence-acknowledged-alive" && !strings.Contains(f.Message, "was not ended by it") {
			t.Errorf("finding %q: want it to say the request did not end the process", f.Message)
		}
	}
}

func TestFencesMutualFencing(t *testing.T) {
	h := newHB()
	h.proc(2, history.KindProcessStart, "c1").proc(2, history.KindProcessStart, "c2")
	// Both ask before either is down: both die.
	h.fence(10, 1, "c1", "off", "c2").fence(11, 2, "c2", "off", "c1")
	h.proc(12, history.KindProcessExit, "c2").fenceReply(12, 1, "c1", "off", "c2", history.FenceDone, "off")
	h.proc(13, history.KindProcessExit, "c1").fenceReply(13, 2, "c2", "off", "c1", history.FenceDone, "off")
	h.end(20)
	r, err := Check(context.Background(), h.ev, Params{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fenceCodes(r); !slices.Equal(got, []string{"fenced-each-other"}) {
		t.Fatalf("findings %v, want fenced-each-other", got)
	}

	// The second request sent after its sender was already powered off is no race.
	h = newHB()
	h.proc(2, history.KindProcessStart, "c1").proc(2, history.KindProcessStart, "c2")
	h.fence(10, 1, "c1", "off", "c2").proc(12, history.KindProcessExit, "c2").fenceReply(12, 1, "c1", "off", "c2", history.FenceDone, "off")
	h.proc(14, history.KindProcessStart, "c2").fence(15, 2, "c2", "off", "c1")
	h.proc(16, history.KindProcessExit, "c1").fenceReply(16, 2, "c2", "off", "c1", history.FenceDone, "off").end(20)
	if r, _ = Check(context.Background(), h.ev, Params{}); len(fenceCodes(r)) != 0 {
		t.Errorf("a fence back after a restart reported as mutual: %v", fenceCodes(r))
	}
}

// TestStepDownArrivingAfterItsKill: a fence kills a leader just after it printed
// stepped-down; the line reaches the history after the kill's signal event. That is the
// same tenure ending earlier, not a contract violation.
func TestStepDownArrivingAfterItsKill(t *testing.T) {
	h := newHB()
	h.proc(2, history.KindProcessStart, "c1").campaign(3, "c1").elected(5, "c1", 1)
	h.signal(20, "c1", "SIGKILL").stepDown(15, "c1", "etcd session lease lost").proc(21, history.KindProcessExit, "c1").end(30)
	r, err := Check(context.Background(), h.ev, Params{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Contract.Count != 0 {
		t.Errorf("late stepped-down flagged: %+v", r.Contract.Violations)
	}
	if tn := r.Tenures.Tenures; len(tn) != 1 || tn[0].EndT != 15*ms {
		t.Errorf("tenures %+v: want one ending at the step-down (15ms)", tn)
	}

	// A stepped-down after the kill's time is still a violation: the process was dead.
	h = newHB()
	h.proc(2, history.KindProcessStart, "c1").elected(5, "c1", 1).signal(20, "c1", "SIGKILL").stepDown(25, "c1", "late").end(30)
	if r, _ = Check(context.Background(), h.ev, Params{}); r.Contract.Count == 0 {
		t.Error("a stepped-down stamped after the kill was accepted")
	}
}

// TestFencesOpsAreCapped: results.json keeps the first and last maxFenceOps/2 requests and
// counts the rest; a flood of requests (refused ones from outside the run, in histories of
// older builds) grew it by about 330 bytes a request, past the 64 MiB the readers take.
func TestFencesOpsAreCapped(t *testing.T) {
	h := newHB()
	h.proc(2, history.KindProcessStart, "c1").proc(2, history.KindProcessStart, "c2")
	const n = 3 * maxFenceOps
	for i := 1; i <= n; i++ {
		h.fence(int64(10+i), i, "", "off", "c2").fenceReply(int64(10+i), i, "", "off", "c2", history.FenceRefused, "")
	}
	h.end(int64(20 + n))
	r, err := Check(context.Background(), h.ev, Params{})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Fences
	if len(f.Ops) != maxFenceOps || f.OpsTotal != n || f.OpsOmitted != n-maxFenceOps {
		t.Fatalf("%d ops kept, total %d, omitted %d: want %d kept of %d, %d omitted", len(f.Ops), f.OpsTotal, f.OpsOmitted, maxFenceOps, n, n-maxFenceOps)
	}
	if first, last := f.Ops[0].ID, f.Ops[len(f.Ops)-1].ID; first != 1 || last != n {
		t.Errorf("kept ops run from fence %d to %d, want the first (1) and the last (%d)", first, last, n)
	}
	if mid := f.Ops[maxFenceOps/2]; mid.ID != n-maxFenceOps/2+1 {
		t.Errorf("first op after the cut is fence %d, want %d", mid.ID, n-maxFenceOps/2+1)
	}
	if f.OffsUnconfirmed != n {
		t.Errorf("offs unconfirmed %d, want every request counted (%d)", f.OffsUnconfirmed, n)
	}
}
