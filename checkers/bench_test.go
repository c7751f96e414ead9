package checkers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// synthetic builds a run of `tenures` tenures rotating over `cands` candidates, each with
// `writesPer` writes (write + decision events), a pause fault every 100 tenures whose
// zombie gets one stale write rejected, and ~1 ms handoffs (with sigterm, each one a
// SIGTERM from the harness, as in the handoff workload: a latency sample per tenure).
func synthetic(cands, tenures, writesPer int, interval int64, sigterm bool) []history.Event {
	ev := make([]history.Event, 0, tenures*(2*writesPer+4)+16)
	add := func(e history.Event) {
		e.V, e.Seq, e.Source = history.Version, int64(len(ev)+1), history.SourceOf(e.Kind)
		ev = append(ev, e)
	}
	t := int64(time.Second)
	add(history.Event{T: t, Kind: history.KindRunStart})
	add(history.Event{T: t, Kind: history.KindPhase, Phase: history.PhaseFaults})
	var max int64
	wid := 0
	decide := func(at int64, node string, tok int64) string {
		wid++
		id := fmt.Sprintf("w%d", wid)
		res := history.ResultAccepted
		if tok < max {
			res = history.ResultRejected
		}
		add(history.Event{T: at, Kind: history.KindDecision, Node: node, Token: tok, WriteID: id, Result: res, Max: max, Stale: tok < max, Mode: ModeFenced})
		if res == history.ResultAccepted && tok > max {
			max = tok
		}
		return id
	}
	for k := 0; k < tenures; k++ {
		node := fmt.Sprintf("c%d", k%cands+1)
		tok := int64(2*k + 1)
		add(history.Event{T: t, Kind: history.KindCampaigning, Node: node})
		t += ms
		add(history.Event{T: t, Kind: history.KindElected, Node: node, Token: tok})
		for w := 0; w < writesPer; w++ {
			call := t + int64(w)*interval
			id := decide(call+ms/2, node, tok)
			add(history.Event{T: call + ms, Kind: history.KindWrite, Node: node, Token: tok, WriteID: id, CallT: call, Result: history.ResultAccepted})
		}
		t += int64(writesPer) * interval
		if k%100 == 99 {
			fid := k/100 + 1
			add(history.Event{T: t, Kind: history.KindFaultStart, FaultID: fid, Fault: "pause", Targets: []string{node}})
			next := fmt.Sprintf("c%d", (k+1)%cands+1)
			add(history.Event{T: t + ms, Kind: history.KindCampaigning, Node: next})
			add(history.Event{T: t + 2*ms, Kind: history.KindElected, Node: next, Token: tok + 1})
			nid := decide(t+2*ms+ms/2, next, tok+1)
			add(history.Event{T: t + 3*ms, Kind: history.KindWrite, Node: next, Token: tok + 1, WriteID: nid, CallT: t + 2*ms, Result: history.ResultAccepted})
			add(history.Event{T: t + 3*ms, Kind: history.KindFaultEnd, FaultID: fid})
			add(history.Event{T: t + 4*ms, Kind: history.KindSteppedDown, Node: next, Reason: "resign"})
			id := decide(t+5*ms, node, tok) // the zombie's stale write, rejected
			add(history.Event{T: t + 6*ms, Kind: history.KindWrite, Node: node, Token: tok, WriteID: id, CallT: t + 4*ms, Result: history.ResultRejected})
			t += 7 * ms
		}
		if sigterm {
			add(history.Event{T: t, Kind: history.KindSignal, Node: node, Signal: "SIGTERM"})
			t += ms / 2
		}
		add(history.Event{T: t, Kind: history.KindSteppedDown, Node: node, Reason: "resign"})
		t += ms
	}
	add(history.Event{T: t, Kind: history.KindPhase, Phase: history.PhaseTeardown})
	add(history.Event{T: t + ms, Kind: history.KindRunEnd})
	return ev
}

// BenchmarkCoreCheckers: checkers 1-3 and 5 (plus the shared index) on 1,000,000 events,
// every tenure ended by a SIGTERM handoff (10,000 latency samples: the worst case for 5).
func BenchmarkCoreCheckers(b *testing.B) {
	ev := synthetic(10, 10000, 49, 50*ms, true)
	b.Logf("%d events", len(ev))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := analyse(ev, Params{})
		var rl reasonList
		checkTenures(a, &rl)
		checkResource(a, &rl)
		checkTokens(a, &rl)
		checkLatency(a, &rl)
		checkContract(a, &rl)
		_ = rl.done()
	}
}

// BenchmarkLatencyManyHandoffs: checker 5 alone on ~1.2M events with 50,000 SIGTERM
// handoffs; finding the leader at each sample's start must not scan all tenures.
func BenchmarkLatencyManyHandoffs(b *testing.B) {
	ev := synthetic(10, 50000, 10, 50*ms, true)
	a := analyse(ev, Params{})
	b.Logf("%d events, %d tenures", len(ev), len(a.tenures))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var rl reasonList
		if res := checkLatency(a, &rl); len(res.Samples) < 50000 {
			b.Fatalf("%d samples", len(res.Samples))
		}
	}
}

// BenchmarkPorcupineTypical: a 60 s run, 50 ms writes, 3 candidates, a handoff every 10 s.
func BenchmarkPorcupineTypical(b *testing.B) {
	ev := synthetic(3, 6, 200, 50*ms, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := analyse(ev, Params{})
		var rl reasonList
		res := checkPorcupine(context.Background(), a, &rl)
		for _, m := range res.Models {
			if m.Result != PorcOK {
				b.Fatalf("%s: %s", m.Model, m.Result)
			}
		}
	}
}

// BenchmarkPorcupineLarge: the fenced register over the 1M-event history (~500k ops,
// partitioned into ~20k-op pieces).
func BenchmarkPorcupineLarge(b *testing.B) {
	ev := synthetic(10, 10000, 49, 50*ms, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := analyse(ev, Params{})
		var rl reasonList
		res := checkPorcupine(context.Background(), a, &rl)
		if i == 0 {
			for _, m := range res.Models {
				b.Logf("%s: %s, %d ops, %d partitions (max %d), %v", m.Model, m.Result, m.Ops, m.Partitions, m.MaxPartitionOps, time.Duration(m.DurationNs))
			}
		}
	}
}

func TestSyntheticIsValid(t *testing.T) {
	ev := synthetic(3, 301, 5, 50*ms, false) // 301: writes follow the final heal
	r, err := Check(context.Background(), ev, Params{})
	if err != nil {
		t.Fatal(err)
	}
	wantVerdict(t, r, Valid)
	if r.Resource.StaleRejectedN != 3 || r.Tenures.OverlapCount != 3 || len(r.Latency.Samples) != 3 {
		t.Fatalf("stale %d overlaps %d samples %d", r.Resource.StaleRejectedN, r.Tenures.OverlapCount, len(r.Latency.Samples))
	}
	r, err = Check(context.Background(), synthetic(3, 301, 5, 50*ms, true), Params{})
	if err != nil {
		t.Fatal(err)
	}
	wantVerdict(t, r, Valid)
	handoffs := 0
	for _, s := range r.Latency.Samples {
		if s.Kind == "handoff" && s.TouchedLeader && s.Outcome == OutcomeFailover {
			handoffs++
		}
	}
	if handoffs != 300 { // the last tenure's SIGTERM has no successor: no-leader
		t.Fatalf("%d handoff failovers, want 300", handoffs)
	}
}
