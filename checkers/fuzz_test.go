package checkers

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

var fuzzKinds = []history.Kind{
	history.KindCampaigning, history.KindElected, history.KindSteppedDown, history.KindWrite, history.KindDecision,
	history.KindFaultStart, history.KindFaultEnd, history.KindSignal, history.KindProcessExit, history.KindProcessStart,
	history.KindContractViolation, history.KindPhase, history.KindRunEnd, history.KindBadRequest, history.KindError,
}

// eventsFromBytes decodes 5 bytes per event: kind, node, token, time step (ms, may go back), flags.
// Any byte string is a history the reader would accept, so the checkers see valid-but-wild input.
func eventsFromBytes(b []byte) []history.Event {
	var out []history.Event
	t := int64(1000 * ms)
	nodes := []string{"c1", "c2", "c3", "resource"}
	results := []string{history.ResultAccepted, history.ResultRejected, history.ResultUnknown}
	for i := 0; i+5 <= len(b) && len(out) < 2000; i += 5 {
		k := fuzzKinds[int(b[i])%len(fuzzKinds)]
		node := nodes[int(b[i+1])%3]
		tok := int64(b[i+2] % 6)
		t += (int64(b[i+3]) - 40) * ms
		if t <= 0 {
			t = 1
		}
		fl := b[i+4]
		e := history.Event{V: history.Version, Seq: int64(len(out) + 1), T: t, Kind: k, Source: history.SourceOf(k), Node: node,
			Token: tok, Stamped: fl&64 != 0}
		switch k {
		case history.KindWrite:
			e.WriteID = string(rune('a' + fl%8))
			e.CallT = t - int64(fl%16)*ms
			if e.CallT <= 0 {
				e.CallT = t
			}
			e.Result = results[int(fl>>4)%3]
		case history.KindDecision:
			e.WriteID = string(rune('a' + fl%8))
			e.Result = results[int(fl>>4)%2]
			e.Max = int64(fl % 5)
			e.Stale = fl&128 != 0
			e.Mode = []string{ModeFenced, ModeUnfenced}[fl%2]
		case history.KindFaultStart, history.KindFaultEnd:
			e.FaultID = int(fl%3) + 1
			e.Fault = []string{"pause", "kill", "partition"}[fl%3]
			e.Targets = []string{node}
			if fl&32 != 0 {
				e.Err = "failed"
			}
		case history.KindSignal:
			e.Signal = []string{"SIGTERM", "SIGKILL", "SIGSTOP"}[fl%3]
		case history.KindPhase:
			e.Phase = []string{history.PhaseWarmup, history.PhaseFaults, history.PhaseHeal, history.PhaseTeardown}[fl%4]
			e.Node = ""
		case history.KindRunEnd:
			e.Node = ""
		}
		out = append(out, e)
	}
	return out
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte{1, 0, 1, 50, 0, 3, 0, 1, 10, 0, 4, 0, 1, 1, 16, 12, 0, 0, 50, 0})
	f.Add([]byte{1, 0, 2, 50, 0, 1, 1, 1, 60, 0, 4, 1, 1, 10, 0, 4, 0, 2, 10, 0, 5, 0, 0, 10, 1})
	f.Add([]byte{0, 0, 0, 40, 0, 1, 0, 3, 41, 0, 5, 0, 0, 41, 0, 1, 1, 4, 41, 0, 6, 0, 0, 41, 0, 2, 0, 0, 41, 0, 12, 0, 0, 41, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		evs := eventsFromBytes(b)
		for i := range evs {
			if err := evs[i].Validate(); err != nil {
				t.Fatalf("generator made an invalid event: %v", err)
			}
		}
		r, err := Check(context.Background(), evs, Params{PorcupineTimeout: Duration(200 * time.Millisecond), Require: []string{RequireExclusive, RequireLiveness}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != Valid && r.Verdict != Invalid && r.Verdict != Unknown {
			t.Fatalf("verdict %q", r.Verdict)
		}
		if r.Verdict == Valid && len(r.Reasons) > 0 {
			t.Fatalf("valid with reasons %+v", r.Reasons)
		}
		for _, o := range r.Tenures.Overlaps {
			if o.EndT <= o.StartT || len(o.Members) < 2 {
				t.Fatalf("bad overlap %+v", o)
			}
		}
		// Reference: the leader at each sample's start by a scan over every tenure.
		ts := analyse(evs, Params{}).tenures
		for _, s := range r.Latency.Samples {
			lead, touched := -1, false
			for i, tn := range ts {
				if tn.StartT <= s.StartT && tn.EndT >= s.StartT {
					lead = i
					touched = touched || slices.Contains(s.Targets, tn.Node)
				}
			}
			want := ""
			if lead >= 0 {
				want = ts[lead].Node
			}
			if s.Leader != want || s.TouchedLeader != touched {
				t.Fatalf("sample %+v: reference leader %q touched %v", s, want, touched)
			}
		}
	})
}
