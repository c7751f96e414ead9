package checkers

import (
	"fmt"
	"sort"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// Tenure is one stretch of a candidate believing it leads: from its elected event to the
// first of stepped-down, harness-observed death (process-exit, SIGKILL, kill fault, restart),
// a new elected event of the same node, or the end of the run. A pause does not end it.
type Tenure struct {
	ID        int    `json:"id"` // index in order of election (StartT, then seq)
	Node      string `json:"node"`
	Token     int64  `json:"token"`
	CampaignT int64  `json:"campaign_t"` // the last campaigning event before it, or StartT
	StartT    int64  `json:"start_t"`
	EndT      int64  `json:"end_t"`
	EndReason string `json:"end_reason"` // stepped-down[:reason] | process-exit | sigkill | restart | re-elected | run-end
	Open      bool   `json:"open"`       // still believed when the run ended
	StartSeq  int64  `json:"start_seq"`
	EndSeq    int64  `json:"end_seq,omitempty"`
	Accepted  int    `json:"writes_accepted"` // resource decisions for this tenure
	Rejected  int    `json:"writes_rejected"`
}

// Overlap is a maximal window in which two or more candidates believe they lead.
type Overlap struct {
	StartT   int64          `json:"start_t"`
	EndT     int64          `json:"end_t"`
	Duration int64          `json:"duration_ns"`
	MaxCount int            `json:"max_leaders"` // most simultaneous believers inside the window
	Members  []OverlapEntry `json:"members"`
}

// OverlapEntry names a tenure taking part in an overlap.
type OverlapEntry struct {
	Tenure int    `json:"tenure"`
	Node   string `json:"node"`
	Token  int64  `json:"token"`
}

// TenureResult is checker 1's section of results.json.
type TenureResult struct {
	Tenures       []Tenure  `json:"tenures"`
	Overlaps      []Overlap `json:"overlaps"`
	OverlapCount  int       `json:"overlap_count"`
	OverlapSumNs  int64     `json:"overlap_sum_ns"`
	OverlapMaxNs  int64     `json:"overlap_max_ns"`
	Elections     int       `json:"elections"`
	LeadersByNode []NodeSum `json:"leaders_by_node"`
}

// NodeSum is per-node leadership totals.
type NodeSum struct {
	Node     string `json:"node"`
	Tenures  int    `json:"tenures"`
	LeaderNs int64  `json:"leader_ns"`
}

// FaultWindow is a nemesis fault from fault-start to fault-end (or run end when never healed).
type FaultWindow struct {
	ID       int      `json:"id"`
	Kind     string   `json:"kind"`
	Targets  []string `json:"targets"`
	Spec     string   `json:"spec,omitempty"`
	StartT   int64    `json:"start_t"`
	EndT     int64    `json:"end_t"`
	Open     bool     `json:"open,omitempty"`       // no fault-end was recorded
	Error    string   `json:"error,omitempty"`      // the fault did not apply
	HealErr  string   `json:"heal_error,omitempty"` // the heal reported an error
	StartSeq int64    `json:"start_seq"`
}

type nodeToken struct {
	node  string
	token int64
}

// analysis is the indexed history every checker reads; built in one pass.
type analysis struct {
	p          Params
	ev         []history.Event
	startT     int64 // run-start, else first event
	endT       int64 // run-end, else last event
	hasRunEnd  bool
	healT      int64 // start of the heal phase, 0 if none
	teardownT  int64 // start of the teardown phase, 0 if none
	tenures    []Tenure
	byNT       map[nodeToken][]int // tenure IDs per (node, token), in election order
	faults     []FaultWindow
	decisions  []int // indices into ev
	writes     []int
	signals    []int
	contract   []ContractViolation
	candidates []string
}

func analyse(ev []history.Event, p Params) *analysis {
	a := &analysis{p: p, ev: ev, byNT: map[nodeToken][]int{}}
	if len(ev) == 0 {
		return a
	}
	a.startT, a.endT = ev[0].T, ev[0].T
	for i := range ev {
		if ev[i].T > a.endT {
			a.endT = ev[i].T
		}
		if ev[i].T < a.startT {
			a.startT = ev[i].T
		}
	}
	type open struct {
		idx       int // index into raw tenures
		lastCamp  int64
		lastT     int64 // last candidate event time, for order checks
		hasTenure bool
	}
	state := map[string]*open{}
	get := func(n string) *open {
		s := state[n]
		if s == nil {
			s = &open{idx: -1}
			state[n] = s
		}
		return s
	}
	var raw []Tenure
	end := func(s *open, t int64, seq int64, reason string) {
		if !s.hasTenure {
			return
		}
		tn := &raw[s.idx]
		if t < tn.StartT {
			a.contract = append(a.contract, ContractViolation{Kind: "out-of-order", T: t, Node: tn.Node, Seq: seq,
				Detail: fmt.Sprintf("tenure end (%s) at t=%d precedes its elected event at t=%d", reason, t, tn.StartT)})
			t = tn.StartT
		}
		tn.EndT, tn.EndSeq, tn.EndReason = t, seq, reason
		s.hasTenure = false
		s.lastCamp = 0
	}
	faultIdx := map[int]int{}
	seenNode := map[string]bool{}
	for i := range ev {
		e := &ev[i]
		switch e.Kind {
		case history.KindRunStart:
			a.startT = e.T
		case history.KindRunEnd:
			a.hasRunEnd = true
			a.endT = e.T
		case history.KindPhase:
			switch e.Phase {
			case history.PhaseHeal:
				a.healT = e.T
			case history.PhaseTeardown:
				a.teardownT = e.T
			}
		case history.KindCampaigning, history.KindElected, history.KindSteppedDown, history.KindWrite, history.KindError:
			if !seenNode[e.Node] {
				seenNode[e.Node] = true
				a.candidates = append(a.candidates, e.Node)
			}
			s := get(e.Node)
			if !e.Stamped && e.T < s.lastT {
				a.contract = append(a.contract, ContractViolation{Kind: "out-of-order", T: e.T, Node: e.Node, Seq: e.Seq,
					Detail: fmt.Sprintf("%s at t=%d is earlier than the node's previous event at t=%d", e.Kind, e.T, s.lastT)})
			}
			if !e.Stamped && e.T > s.lastT {
				s.lastT = e.T
			}
			switch e.Kind {
			case history.KindCampaigning:
				// The latest attempt is the one an election results from.
				if !s.hasTenure {
					s.lastCamp = e.T
				}
			case history.KindElected:
				if e.Token <= 0 {
					a.contract = append(a.contract, ContractViolation{Kind: "elected-without-token", T: e.T, Node: e.Node, Seq: e.Seq,
						Detail: fmt.Sprintf("elected event has token %d; tokens must be >= 1", e.Token)})
				}
				if s.hasTenure {
					a.contract = append(a.contract, ContractViolation{Kind: "out-of-order", T: e.T, Node: e.Node, Seq: e.Seq,
						Detail: fmt.Sprintf("elected again (token %d) without stepping down from token %d", e.Token, raw[s.idx].Token)})
					end(s, e.T, e.Seq, "re-elected")
				}
				camp := s.lastCamp
				if camp == 0 || camp > e.T {
					camp = e.T
				}
				raw = append(raw, Tenure{Node: e.Node, Token: e.Token, CampaignT: camp, StartT: e.T, StartSeq: e.Seq})
				s.idx, s.hasTenure = len(raw)-1, true
			case history.KindSteppedDown:
				if !s.hasTenure {
					a.contract = append(a.contract, ContractViolation{Kind: "out-of-order", T: e.T, Node: e.Node, Seq: e.Seq,
						Detail: "stepped-down without a preceding elected event"})
					continue
				}
				r := "stepped-down"
				if e.Reason != "" {
					r += ":" + e.Reason
				}
				end(s, e.T, e.Seq, r)
			case history.KindWrite:
				a.writes = append(a.writes, i)
			}
		case history.KindProcessExit:
			end(get(e.Node), e.T, e.Seq, "process-exit")
		case history.KindProcessStart:
			end(get(e.Node), e.T, e.Seq, "restart")
		case history.KindSignal:
			a.signals = append(a.signals, i)
			if e.Signal == "SIGKILL" || e.Signal == "KILL" || e.Signal == "9" {
				s := get(e.Node)
				switch {
				case s.hasTenure:
					end(s, e.T, e.Seq, "sigkill")
				case s.idx >= 0:
					// The harness's process-exit (stamped when its poll noticed) may have been
					// appended first and ended the tenure later than the kill: the process was
					// dead from the kill on.
					if tn := &raw[s.idx]; tn.StartT <= e.T && e.T < tn.EndT {
						tn.EndT, tn.EndSeq, tn.EndReason = e.T, e.Seq, "sigkill"
					}
				}
			}
		case history.KindContractViolation:
			a.contract = append(a.contract, ContractViolation{Kind: "malformed-output", T: e.T, Node: e.Node, Seq: e.Seq,
				Detail: truncate(e.Reason+": "+e.Line, 300)})
		case history.KindDecision:
			a.decisions = append(a.decisions, i)
		case history.KindBadRequest:
			a.contract = append(a.contract, ContractViolation{Kind: "bad-request", T: e.T, Node: e.Node, Seq: e.Seq,
				Detail: truncate(e.Reason, 300)})
		case history.KindFaultStart:
			faultIdx[e.FaultID] = len(a.faults)
			a.faults = append(a.faults, FaultWindow{ID: e.FaultID, Kind: e.Fault, Targets: e.Targets, Spec: e.Spec,
				StartT: e.T, EndT: -1, Error: e.Err, StartSeq: e.Seq})
		case history.KindFaultEnd:
			if j, ok := faultIdx[e.FaultID]; ok && a.faults[j].EndT < 0 {
				a.faults[j].EndT = e.T
				a.faults[j].HealErr = e.Err
			}
		}
	}
	for n, s := range state {
		if s.hasTenure {
			raw[s.idx].EndT, raw[s.idx].EndReason, raw[s.idx].Open = a.endT, "run-end", true
			_ = n
		}
	}
	for i := range a.faults {
		if a.faults[i].EndT < 0 {
			a.faults[i].EndT, a.faults[i].Open = a.endT, true
		}
	}
	// Election order: by elected time, ties by seq.
	sort.SliceStable(raw, func(i, j int) bool {
		if raw[i].StartT != raw[j].StartT {
			return raw[i].StartT < raw[j].StartT
		}
		return raw[i].StartSeq < raw[j].StartSeq
	})
	for i := range raw {
		raw[i].ID = i
		k := nodeToken{raw[i].Node, raw[i].Token}
		a.byNT[k] = append(a.byNT[k], i)
	}
	a.tenures = raw
	if len(p.Nodes) > 0 {
		a.candidates = append([]string(nil), p.Nodes...)
	}
	sort.Strings(a.candidates)
	return a
}

// tenureAt finds the tenure of (node, token) that contains t, else the latest one that
// started at or before t, else the first; -1 when the pair never led.
func (a *analysis) tenureAt(node string, token int64, t int64) (id int, inside bool) {
	ids := a.byNT[nodeToken{node, token}]
	if len(ids) == 0 {
		return -1, false
	}
	best := ids[0]
	for _, i := range ids {
		tn := &a.tenures[i]
		if tn.StartT <= t && t <= tn.EndT {
			return i, true
		}
		if tn.StartT <= t {
			best = i
		}
	}
	return best, false
}

// checkTenures is checker 1: the exact O(n log n) sweep for belief overlap.
func checkTenures(a *analysis, rl *reasonList) TenureResult {
	res := TenureResult{Tenures: a.tenures, Elections: len(a.tenures), Overlaps: []Overlap{}}
	type point struct {
		t     int64
		start bool
		id    int
	}
	pts := make([]point, 0, 2*len(a.tenures))
	for i := range a.tenures {
		tn := &a.tenures[i]
		if tn.EndT <= tn.StartT {
			continue // zero-length belief cannot overlap anything
		}
		pts = append(pts, point{tn.StartT, true, i}, point{tn.EndT, false, i})
	}
	// Ends before starts at the same instant: touching tenures (0 ns overlap) are not an overlap.
	sort.Slice(pts, func(i, j int) bool {
		if pts[i].t != pts[j].t {
			return pts[i].t < pts[j].t
		}
		if pts[i].start != pts[j].start {
			return !pts[i].start
		}
		return pts[i].id < pts[j].id
	})
	active := map[int]struct{}{}
	var cur *Overlap
	inWin := map[int]bool{}
	for _, pt := range pts {
		if pt.start {
			active[pt.id] = struct{}{}
			if len(active) >= 2 {
				if cur == nil {
					cur = &Overlap{StartT: pt.t}
					inWin = map[int]bool{}
					for id := range active {
						inWin[id] = true
					}
				} else {
					inWin[pt.id] = true
				}
				if len(active) > cur.MaxCount {
					cur.MaxCount = len(active)
				}
			}
			continue
		}
		delete(active, pt.id)
		if cur != nil && len(active) < 2 {
			cur.EndT = pt.t
			cur.Duration = cur.EndT - cur.StartT
			ids := make([]int, 0, len(inWin))
			for id := range inWin {
				ids = append(ids, id)
			}
			sort.Ints(ids)
			for _, id := range ids {
				cur.Members = append(cur.Members, OverlapEntry{Tenure: id, Node: a.tenures[id].Node, Token: a.tenures[id].Token})
			}
			res.Overlaps = append(res.Overlaps, *cur)
			cur = nil
		}
	}
	sev := SevFinding
	if a.p.requires(RequireExclusive) {
		sev = SevInvalid
	}
	for _, o := range res.Overlaps {
		res.OverlapCount++
		res.OverlapSumNs += o.Duration
		if o.Duration > res.OverlapMaxNs {
			res.OverlapMaxNs = o.Duration
		}
		var nodes []string
		var toks []int64
		var seqs []int64
		for _, m := range o.Members {
			nodes = append(nodes, m.Node)
			toks = append(toks, m.Token)
			seqs = append(seqs, a.tenures[m.Tenure].StartSeq)
		}
		rl.add(Reason{Checker: "tenures", Code: "leader-overlap", Severity: sev, T: o.StartT, EndT: o.EndT,
			Nodes: nodes, Tokens: toks, Seqs: seqs,
			Message: fmt.Sprintf("%d candidates believed they led at once for %s from %s (%v with tokens %v)",
				o.MaxCount, fmtD(o.Duration), fmtT(o.StartT, a.startT), nodes, toks)})
	}
	per := map[string]*NodeSum{}
	for _, tn := range a.tenures {
		s := per[tn.Node]
		if s == nil {
			s = &NodeSum{Node: tn.Node}
			per[tn.Node] = s
		}
		s.Tenures++
		s.LeaderNs += tn.EndT - tn.StartT
	}
	for _, s := range per {
		res.LeadersByNode = append(res.LeadersByNode, *s)
	}
	sort.Slice(res.LeadersByNode, func(i, j int) bool { return res.LeadersByNode[i].Node < res.LeadersByNode[j].Node })
	return res
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
