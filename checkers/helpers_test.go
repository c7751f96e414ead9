package checkers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

const ms = int64(time.Millisecond)

var sourceOf = map[history.Kind]history.Source{
	history.KindCampaigning: history.SourceCandidate, history.KindElected: history.SourceCandidate,
	history.KindSteppedDown: history.SourceCandidate, history.KindWrite: history.SourceCandidate, history.KindError: history.SourceCandidate,
	history.KindDecision: history.SourceResource, history.KindBadRequest: history.SourceResource,
	history.KindRunStart: history.SourceHarness, history.KindPhase: history.SourceHarness, history.KindProcessStart: history.SourceHarness,
	history.KindProcessExit: history.SourceHarness, history.KindSignal: history.SourceHarness,
	history.KindContractViolation: history.SourceHarness, history.KindRunEnd: history.SourceHarness,
	history.KindFaultStart: history.SourceNemesis, history.KindFaultEnd: history.SourceNemesis,
}

// hb builds a history by hand; times are in ms from an arbitrary base.
type hb struct {
	ev      []history.Event
	mode    string
	max     int64
	haveMax bool
	wseq    int
}

func newHB() *hb {
	h := &hb{mode: ModeFenced}
	h.add(history.Event{T: 1 * ms, Kind: history.KindRunStart})
	return h
}

func (h *hb) add(e history.Event) *hb {
	e.V = history.Version
	e.Seq = int64(len(h.ev) + 1)
	e.Source = sourceOf[e.Kind]
	h.ev = append(h.ev, e)
	return h
}

func (h *hb) campaign(t int64, n string) *hb {
	return h.add(history.Event{T: t * ms, Kind: history.KindCampaigning, Node: n})
}
func (h *hb) elected(t int64, n string, tok int64) *hb {
	return h.add(history.Event{T: t * ms, Kind: history.KindElected, Node: n, Token: tok})
}
func (h *hb) stepDown(t int64, n, why string) *hb {
	return h.add(history.Event{T: t * ms, Kind: history.KindSteppedDown, Node: n, Reason: why})
}
func (h *hb) phase(t int64, p string) *hb {
	return h.add(history.Event{T: t * ms, Kind: history.KindPhase, Phase: p})
}
func (h *hb) fault(t int64, id int, kind string, targets ...string) *hb {
	if kind == "kill" { // the nemesis records a crash as a SIGKILL signal per target first
		for _, n := range targets {
			h.signal(t, n, "SIGKILL")
		}
	}
	return h.add(history.Event{T: t * ms, Kind: history.KindFaultStart, FaultID: id, Fault: kind, Targets: targets})
}
func (h *hb) heal(t int64, id int) *hb {
	return h.add(history.Event{T: t * ms, Kind: history.KindFaultEnd, FaultID: id})
}
func (h *hb) signal(t int64, n, sig string) *hb {
	return h.add(history.Event{T: t * ms, Kind: history.KindSignal, Node: n, Signal: sig})
}
func (h *hb) end(t int64) *hb { return h.add(history.Event{T: t * ms, Kind: history.KindRunEnd}) }

// decide appends a resource decision the way a correct resource in h.mode would.
func (h *hb) decide(tns int64, n string, tok int64, id string) string {
	fresh := !h.haveMax || tok >= h.max
	res := history.ResultAccepted
	if !fresh && h.mode == ModeFenced {
		res = history.ResultRejected
	}
	h.add(history.Event{T: tns, Kind: history.KindDecision, Node: n, Token: tok, WriteID: id, Result: res,
		Max: h.max, Stale: !fresh, Mode: h.mode})
	if res == history.ResultAccepted && (!h.haveMax || tok > h.max) {
		h.max, h.haveMax = tok, true
	}
	return res
}

// write is a leader write sent at call ms, decided 1 ms later, answered at call+2 ms.
func (h *hb) write(call int64, n string, tok int64) *hb {
	h.wseq++
	id := fmt.Sprintf("%s-%d", n, h.wseq)
	res := h.decide(call*ms+ms, n, tok, id)
	return h.add(history.Event{T: call*ms + 2*ms, Kind: history.KindWrite, Node: n, Token: tok, WriteID: id, CallT: call * ms, Result: res})
}

// writes sends leader writes every 50 ms in [from, to).
func (h *hb) writes(from, to int64, n string, tok int64) *hb {
	for t := from; t < to; t += 50 {
		h.write(t, n, tok)
	}
	return h
}

func check(t *testing.T, h *hb, p Params) *Results {
	t.Helper()
	if p.PorcupineTimeout == 0 {
		p.PorcupineTimeout = Duration(10 * time.Second)
	}
	for i := range h.ev {
		if err := h.ev[i].Validate(); err != nil {
			t.Fatalf("test history event %d invalid: %v", i, err)
		}
	}
	r, err := Check(context.Background(), h.ev, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func codes(rs []Reason) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		m[r.Code]++
	}
	return m
}

func wantVerdict(t *testing.T, r *Results, v Verdict) {
	t.Helper()
	if r.Verdict != v {
		t.Fatalf("verdict %s, want %s; reasons: %+v", r.Verdict, v, r.Reasons)
	}
}

func model(r *Results, name string) ModelResult {
	for _, m := range r.Porcupine.Models {
		if m.Model == name {
			return m
		}
	}
	return ModelResult{}
}
