package checkers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// The reference oracle: brute-force, obviously-correct versions of the properties that decide
// verdicts (belief overlap, stale write accepted, interleaving, token order), computed from
// the ground truth a generator used to write a random small history, and compared with what
// the real checkers find in that history.

// oTenure is one tenure as the generator made it.
type oTenure struct {
	node        string
	token       int64
	call, start int64 // the winning acquire's send time, the elected time
	end         int64 // -1: still leading at run end
	seq         int64 // the elected event's seq, for election order on equal starts
}

// oDecision is one resource decision as the generator made it.
type oDecision struct {
	node     string
	token    int64
	t        int64
	accepted bool
}

type oHistory struct {
	ev        []history.Event
	tenures   []oTenure // in election order once built
	decisions []oDecision
	endT      int64
}

// genHistory writes a random history of up to 3 candidates on a coarse time grid (so that
// equal times, touching tenures and ties happen often).
func genHistory(r *rand.Rand) oHistory {
	var h oHistory
	type pending struct {
		e   history.Event
		ord int
	}
	ps := make([]pending, 0, 48)
	add := func(e history.Event) int {
		e.V, e.Source = history.Version, history.SourceOf(e.Kind)
		ps = append(ps, pending{e, len(ps)})
		return len(ps) - 1
	}
	var electedOrd []int // ord of each tenure's elected event
	grid := func(n int) int64 { return int64(r.IntN(n)+1) * 10 * ms }
	h.endT = 1000 * ms
	add(history.Event{T: ms, Kind: history.KindRunStart})
	nodes := []string{"c1", "c2", "c3"}[:1+r.IntN(3)]
	for _, n := range nodes {
		t := int64(5 * ms)
		for k := 0; k < 1+r.IntN(3) && t < h.endT-100*ms; k++ {
			camp := t + grid(10)
			call := camp + grid(3) - 10*ms
			start := call + grid(6) - 10*ms
			if start >= h.endT {
				break
			}
			tn := oTenure{node: n, token: int64(1 + r.IntN(6)), call: call, start: start, end: -1}
			add(history.Event{T: camp, Kind: history.KindCampaigning, Node: n})
			el := history.Event{T: start, Kind: history.KindElected, Node: n, Token: tn.token}
			if r.IntN(3) > 0 {
				el.CallT = call
			} else {
				tn.call = camp // without call_t the checker falls back to the campaigning time
			}
			electedOrd = append(electedOrd, add(el))
			if r.IntN(5) > 0 {
				tn.end = start + grid(20) - 10*ms
				if tn.end >= h.endT {
					tn.end = -1
				} else {
					add(history.Event{T: tn.end, Kind: history.KindSteppedDown, Node: n, Reason: "lost"})
					t = tn.end
				}
			}
			h.tenures = append(h.tenures, tn)
			if tn.end < 0 {
				break
			}
		}
	}
	// Decisions of a resource in one mode; a fenced one sometimes (a bug) accepts a stale write.
	mode := []string{ModeFenced, ModeUnfenced}[r.IntN(2)]
	var maxTok int64
	haveMax := false
	var dts []int64
	for i := 0; i < r.IntN(12); i++ {
		dts = append(dts, grid(99))
	}
	slices.Sort(dts)
	for _, t := range dts {
		var node string
		var tok int64
		if len(h.tenures) > 0 && r.IntN(6) > 0 {
			tn := h.tenures[r.IntN(len(h.tenures))]
			node, tok = tn.node, tn.token
		} else {
			node, tok = nodes[r.IntN(len(nodes))], int64(1+r.IntN(6))
		}
		fresh := !haveMax || tok >= maxTok
		accepted := fresh || mode == ModeUnfenced || r.IntN(8) == 0
		res := history.ResultRejected
		if accepted {
			res = history.ResultAccepted
		}
		add(history.Event{T: t, Kind: history.KindDecision, Node: node, Token: tok, WriteID: fmt.Sprintf("w%d", len(ps)),
			Result: res, Max: maxTok, Stale: !fresh, Mode: mode})
		h.decisions = append(h.decisions, oDecision{node, tok, t, accepted})
		if accepted && (!haveMax || tok > maxTok) {
			maxTok, haveMax = tok, true
		}
	}
	add(history.Event{T: h.endT, Kind: history.KindRunEnd})
	// Time order; the generator's order breaks ties (decisions are then in log order).
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].e.T < ps[j].e.T })
	seqOf := make([]int64, len(ps))
	h.ev = make([]history.Event, len(ps))
	for i := range ps {
		ps[i].e.Seq = int64(i + 1)
		h.ev[i] = ps[i].e
		seqOf[ps[i].ord] = int64(i + 1)
	}
	for i := range h.tenures {
		h.tenures[i].seq = seqOf[electedOrd[i]]
	}
	sort.SliceStable(h.tenures, func(i, j int) bool {
		if h.tenures[i].start != h.tenures[j].start {
			return h.tenures[i].start < h.tenures[j].start
		}
		return h.tenures[i].seq < h.tenures[j].seq
	})
	return h
}

func (tn oTenure) endOr(endT int64) int64 {
	if tn.end < 0 {
		return endT
	}
	return tn.end
}

// oracleOverlap: walk every elementary interval between consecutive distinct tenure bounds
// and count the believers inside it; windows are maximal runs of intervals with >= 2, split
// where fewer than two believe at the shared instant itself (beliefs are open intervals, so
// a tenure that ends where another begins touches it without overlapping).
func oracleOverlap(h oHistory) (windows int, total int64) {
	var bounds []int64
	for _, tn := range h.tenures {
		bounds = append(bounds, tn.start, tn.endOr(h.endT))
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	in := false
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]
		n := 0
		for _, tn := range h.tenures {
			if tn.start <= lo && hi <= tn.endOr(h.endT) && tn.start < tn.endOr(h.endT) {
				n++
			}
		}
		if n >= 2 {
			at := 0 // believers at the instant lo itself
			for _, tn := range h.tenures {
				if tn.start < lo && lo < tn.endOr(h.endT) {
					at++
				}
			}
			if !in || at < 2 {
				windows++
			}
			total += hi - lo
		}
		in = n >= 2
	}
	return windows, total
}

// oracleTenureOf is the tenure a decision belongs to: the one of its (node, token) that
// contains t, else the latest begun at or before t, else the first; -1 none.
func oracleTenureOf(h oHistory, d oDecision) int {
	best := -1
	for i, tn := range h.tenures {
		if tn.node != d.node || tn.token != d.token {
			continue
		}
		if tn.start <= d.t && d.t <= tn.endOr(h.endT) {
			return i
		}
		if best < 0 || tn.start <= d.t {
			best = i
		}
	}
	return best
}

// oracleResource: a stale accept is an accepted token below the highest token accepted
// before it; an interleaving is an accepted write of a tenure older (in election order)
// than the tenure of some earlier accepted write.
func oracleResource(h oHistory) (stale, interleavings int) {
	for i, d := range h.decisions {
		if !d.accepted {
			continue
		}
		ti := oracleTenureOf(h, d)
		staleHere, olderHere := false, false
		for _, p := range h.decisions[:i] {
			if !p.accepted {
				continue
			}
			if p.token > d.token {
				staleHere = true
			}
			if tp := oracleTenureOf(h, p); ti >= 0 && tp > ti {
				olderHere = true
			}
		}
		if staleHere {
			stale++
		}
		if olderHere {
			interleavings++
		}
	}
	return stale, interleavings
}

// oracleTokens: B is not monotone when some A's grant returned before B's winning acquire
// was sent and A's token is higher; an overlapping inversion is a higher token announced
// strictly earlier without such an A; a duplicate reuses the token of the latest earlier
// tenure with it, unless that is the same node's directly preceding tenure.
func oracleTokens(h oHistory) (notMono, overlapping, dups int) {
	ts := h.tenures
	for b := range ts {
		sound, announced := false, false
		for a := range ts {
			if a == b {
				continue
			}
			if ts[a].start < ts[b].call && ts[a].token > ts[b].token {
				sound = true
			}
			if ts[a].start < ts[b].start && ts[a].token > ts[b].token {
				announced = true
			}
		}
		switch {
		case sound:
			notMono++
		case announced:
			overlapping++
		}
		for a := b - 1; a >= 0; a-- {
			if ts[a].token == ts[b].token {
				if ts[a].node != ts[b].node || a != b-1 {
					dups++
				}
				break
			}
		}
	}
	return notMono, overlapping, dups
}

// compareWithOracle returns what the real checkers got wrong on h ("" = nothing).
func compareWithOracle(h oHistory) string {
	a := analyse(h.ev, Params{})
	var rl reasonList
	tr := checkTenures(a, &rl)
	rr := checkResource(a, &rl)
	kr := checkTokens(a, &rl)
	var diffs []string
	if w, total := oracleOverlap(h); w != tr.OverlapCount || total != tr.OverlapSumNs {
		diffs = append(diffs, fmt.Sprintf("overlaps %d (%d ns), oracle %d (%d ns)", tr.OverlapCount, tr.OverlapSumNs, w, total))
	}
	if s, il := oracleResource(h); s != rr.StaleAcceptedN || il != rr.InterleavingsN {
		diffs = append(diffs, fmt.Sprintf("stale accepted %d interleavings %d, oracle %d %d", rr.StaleAcceptedN, rr.InterleavingsN, s, il))
	}
	if nm, ov, d := oracleTokens(h); nm != kr.NotMono || ov != kr.Overlapping || d != kr.Duplicates {
		diffs = append(diffs, fmt.Sprintf("tokens not-monotone %d overlapping %d duplicates %d, oracle %d %d %d", kr.NotMono, kr.Overlapping, kr.Duplicates, nm, ov, d))
	}
	if len(diffs) == 0 {
		return ""
	}
	return fmt.Sprint(diffs)
}

// TestCheckersAgreeWithOracle compares on 100,000 random small histories (about a second).
func TestCheckersAgreeWithOracle(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		h := genHistory(rand.New(rand.NewPCG(seed, 0x5b)))
		if d := compareWithOracle(h); d != "" {
			t.Fatalf("seed %d: %s\nhistory:\n%s", seed, d, dumpHistory(h.ev))
		}
	}
}

// FuzzCheckersAgreeWithOracle lets the fuzzer pick generator seeds; testdata/fuzz keeps the
// seeds of anything it ever found.
func FuzzCheckersAgreeWithOracle(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		h := genHistory(rand.New(rand.NewPCG(s1, s2)))
		if d := compareWithOracle(h); d != "" {
			t.Fatalf("%s\nhistory:\n%s", d, dumpHistory(h.ev))
		}
	})
}

func dumpHistory(ev []history.Event) string {
	var b []byte
	for _, e := range ev {
		b = fmt.Appendf(b, "%d %s %s tok=%d call=%d res=%s\n", e.T/ms, e.Kind, e.Node, e.Token, e.CallT/ms, e.Result)
	}
	return string(b)
}
