package checkers

import (
	"context"
	"fmt"
	"sort"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// Tenure is one stretch of a candidate believing it leads: from its elected event to the
// first of stepped-down, harness-observed death (process-exit, SIGKILL, restart),
// a new elected event of the same node, or the end of the run. A pause does not end it.
type Tenure struct {
	ID        int    `json:"id"` // index in order of election (StartT, then seq)
	Node      string `json:"node"`
	Token     int64  `json:"token"`
	CampaignT int64  `json:"campaign_t"` // the last campaigning event before it, or StartT
	// GrantCallT is when the winning acquire was sent: the elected event's call_t, else a
	// conservative earlier bound (docs/checkers.md). The grant took effect in [GrantCallT, StartT].
	GrantCallT int64  `json:"grant_call_t"`
	StartT     int64  `json:"start_t"`
	EndT       int64  `json:"end_t"`
	EndReason  string `json:"end_reason"` // stepped-down[:reason] | process-exit | sigkill | restart | re-elected | run-end
	Open       bool   `json:"open"`       // still believed when the run ended
	StartSeq   int64  `json:"start_seq"`
	EndSeq     int64  `json:"end_seq,omitempty"`
	Accepted   int    `json:"writes_accepted"` // resource decisions for this tenure
	Rejected   int    `json:"writes_rejected"`
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
	// Trigger is the event that started a triggered fault (on=EVENT), on TriggerNodes at
	// TriggerT; empty for a time-tabled fault.
	Trigger      string   `json:"trigger,omitempty"`
	TriggerNodes []string `json:"trigger_nodes,omitempty"`
	TriggerT     int64    `json:"trigger_t,omitempty"`
}

type nodeToken struct {
	node  string
	token int64
}

// analysis is the indexed history every checker reads; built in one pass.
type analysis struct {
	p             Params
	ev            []history.Event
	startT        int64 // run-start, else first event
	endT          int64 // run-end, else last event
	hasRunEnd     bool
	runEndReason  string // run-end's reason: why the run stopped early ("" = it completed)
	nodeExits     []int  // node-exit events (store nodes, resource), indices into ev
	planned       []int  // fault-planned events (schedule entries), indices into ev
	harnessErrors []int  // harness-error events, indices into ev
	healT         int64  // start of the heal phase, 0 if none
	teardownT     int64  // start of the teardown phase, 0 if none
	tenures       []Tenure
	byNT          map[nodeToken][]int // tenure IDs per (node, token), in election order
	faults        []FaultWindow
	decisions     []int // indices into ev
	writes        []int
	signals       []int
	contract      []ContractViolation
	candidates    []string
}

func analyse(ev []history.Event, p Params) *analysis {
	b := &builder{a: &analysis{p: p, ev: ev, byNT: map[nodeToken][]int{}}, state: map[string]*nodeState{},
		faultIdx: map[int]int{}, seenNode: map[string]bool{}}
	if len(ev) == 0 {
		return b.a
	}
	b.bounds()
	for i := range ev {
		b.event(i)
	}
	b.closeOpen()
	b.orderTenures()
	return b.a
}

// nodeState is what the one-pass analysis remembers about one candidate.
type nodeState struct {
	idx       int   // index into raw tenures of the latest tenure, -1 none
	lastCamp  int64 // the latest campaigning event since the last tenure ended
	lastEnd   int64 // when its latest tenure ended or its process (re)started
	lastT     int64 // last candidate event time, for order checks
	hasTenure bool
}

// builder turns the event stream into the analysis in one pass, one handler per kind family.
type builder struct {
	a        *analysis
	state    map[string]*nodeState
	raw      []Tenure
	faultIdx map[int]int // fault id -> index into a.faults
	seenNode map[string]bool
}

// bounds sets the observation window from the extreme timestamps; run-start/run-end refine it.
func (b *builder) bounds() {
	a := b.a
	a.startT, a.endT = a.ev[0].T, a.ev[0].T
	for i := range a.ev {
		a.endT = max(a.endT, a.ev[i].T)
		a.startT = min(a.startT, a.ev[i].T)
	}
}

func (b *builder) node(n string) *nodeState {
	s := b.state[n]
	if s == nil {
		s = &nodeState{idx: -1}
		b.state[n] = s
	}
	return s
}

func (b *builder) violation(kind string, e *history.Event, format string, args ...any) {
	b.a.contract = append(b.a.contract, ContractViolation{Kind: kind, T: e.T, Node: e.Node, Seq: e.Seq, Detail: fmt.Sprintf(format, args...)})
}

// end closes the node's open tenure at t.
func (b *builder) end(s *nodeState, t int64, seq int64, reason string) {
	s.lastEnd = max(s.lastEnd, t)
	if !s.hasTenure {
		return
	}
	tn := &b.raw[s.idx]
	if t < tn.StartT {
		b.a.contract = append(b.a.contract, ContractViolation{Kind: "out-of-order", T: t, Node: tn.Node, Seq: seq,
			Detail: fmt.Sprintf("tenure end (%s) at t=%d precedes its elected event at t=%d", reason, t, tn.StartT)})
		t = tn.StartT
	}
	tn.EndT, tn.EndSeq, tn.EndReason = t, seq, reason
	s.hasTenure = false
	s.lastCamp = 0
}

// event dispatches one event to the handler of its kind.
func (b *builder) event(i int) {
	a, e := b.a, &b.a.ev[i]
	switch e.Kind {
	case history.KindRunStart, history.KindRunEnd, history.KindPhase, history.KindHarnessError:
		b.lifecycle(i, e)
	case history.KindCampaigning, history.KindElected, history.KindSteppedDown, history.KindWrite, history.KindError:
		b.candidate(i, e)
	case history.KindProcessExit:
		b.end(b.node(e.Node), e.T, e.Seq, "process-exit")
	case history.KindProcessStart:
		b.end(b.node(e.Node), e.T, e.Seq, "restart")
	case history.KindSignal:
		a.signals = append(a.signals, i)
		if e.Signal == "SIGKILL" || e.Signal == "KILL" || e.Signal == "9" {
			b.end(b.node(e.Node), e.T, e.Seq, "sigkill")
		}
	case history.KindNodeExit:
		a.nodeExits = append(a.nodeExits, i)
	case history.KindContractViolation:
		b.violation("malformed-output", e, "%s", truncate(e.Reason+": "+e.Line, 300))
	case history.KindDecision:
		a.decisions = append(a.decisions, i)
	case history.KindBadRequest:
		b.violation("bad-request", e, "%s", truncate(e.Reason, 300))
	case history.KindFaultStart, history.KindFaultEnd:
		b.fault(e)
	case history.KindFaultPlanned:
		a.planned = append(a.planned, i)
	}
}

// lifecycle records the run's frame: start, end (and why), phases, harness errors.
func (b *builder) lifecycle(i int, e *history.Event) {
	a := b.a
	switch e.Kind {
	case history.KindRunStart:
		a.startT = e.T
	case history.KindRunEnd:
		a.hasRunEnd, a.endT, a.runEndReason = true, e.T, e.Reason
	case history.KindHarnessError:
		a.harnessErrors = append(a.harnessErrors, i)
	case history.KindPhase:
		switch e.Phase {
		case history.PhaseHeal:
			a.healT = e.T
		case history.PhaseTeardown:
			a.teardownT = e.T
		}
	}
}

// candidate handles the contract's events: tenures open on elected and close on stepped-down.
func (b *builder) candidate(i int, e *history.Event) {
	a := b.a
	if !b.seenNode[e.Node] {
		b.seenNode[e.Node] = true
		a.candidates = append(a.candidates, e.Node)
	}
	s := b.node(e.Node)
	if !e.Stamped && e.T < s.lastT {
		b.violation("out-of-order", e, "%s at t=%d is earlier than the node's previous event at t=%d", e.Kind, e.T, s.lastT)
	}
	if !e.Stamped && e.T > s.lastT {
		s.lastT = e.T
	}
	switch e.Kind {
	case history.KindCampaigning:
		if !s.hasTenure { // the latest attempt is the one an election results from
			s.lastCamp = e.T
		}
	case history.KindElected:
		b.elected(s, e)
	case history.KindSteppedDown:
		if !s.hasTenure && b.lateLine(s, e) {
			return
		}
		if !s.hasTenure {
			b.violation("out-of-order", e, "stepped-down without a preceding elected event")
			return
		}
		r := "stepped-down"
		if e.Reason != "" {
			r += ":" + e.Reason
		}
		b.end(s, e.T, e.Seq, r)
	case history.KindWrite:
		a.writes = append(a.writes, i)
	}
}

// lateLine: a stepped-down the process printed before it was killed (a fence's or a
// fault's SIGKILL, recorded when the kill took effect) can reach the history after that kill
// when it was still in the pipe. It belongs to the tenure the kill ended, which then ended
// at the step-down, earlier; not a contract violation.
func (b *builder) lateLine(s *nodeState, e *history.Event) bool {
	if e.Stamped || s.idx < 0 || s.idx >= len(b.raw) {
		return false
	}
	tn := &b.raw[s.idx]
	if tn.Node != e.Node || tn.EndReason != "sigkill" || e.T < tn.StartT || e.T > tn.EndT {
		return false
	}
	tn.EndT, tn.EndReason = e.T, "stepped-down:"+e.Reason
	return true
}

func (b *builder) elected(s *nodeState, e *history.Event) {
	if e.Token <= 0 {
		b.violation("elected-without-token", e, "elected event has token %d; tokens must be >= 1", e.Token)
	}
	if s.hasTenure {
		b.violation("out-of-order", e, "elected again (token %d) without stepping down from token %d", e.Token, b.raw[s.idx].Token)
		b.end(s, e.T, e.Seq, "re-elected")
	}
	camp := s.lastCamp
	if camp == 0 || camp > e.T {
		camp = e.T
	}
	b.raw = append(b.raw, Tenure{Node: e.Node, Token: e.Token, CampaignT: camp, GrantCallT: b.grantCall(s, e),
		StartT: e.T, StartSeq: e.Seq})
	s.idx, s.hasTenure = len(b.raw)-1, true
}

// grantCall is the earliest the grant can have taken effect: the winning acquire's send time
// (call_t) when the candidate reports it, else its latest campaigning, else the end of its
// previous tenure or process start, else the run start. Earlier is conservative: it only
// widens the grant interval [GrantCallT, StartT].
func (b *builder) grantCall(s *nodeState, e *history.Event) int64 {
	switch {
	case e.CallT > 0 && e.CallT <= e.T:
		return e.CallT
	case s.lastCamp > 0 && s.lastCamp <= e.T:
		return s.lastCamp
	case s.lastEnd > 0 && s.lastEnd <= e.T:
		return s.lastEnd
	}
	return min(b.a.startT, e.T)
}

// fault opens and closes fault windows. Tenures end only on what the process did (exit,
// SIGKILL, restart), never on a fault kind's name.
func (b *builder) fault(e *history.Event) {
	a := b.a
	if e.Kind == history.KindFaultStart {
		b.faultIdx[e.FaultID] = len(a.faults)
		a.faults = append(a.faults, FaultWindow{ID: e.FaultID, Kind: e.Fault, Targets: e.Targets, Spec: e.Spec,
			StartT: e.T, EndT: -1, Error: e.Err, StartSeq: e.Seq, Trigger: e.Trigger, TriggerNodes: e.TriggerNodes, TriggerT: e.TriggerT})
		return
	}
	if j, ok := b.faultIdx[e.FaultID]; ok && a.faults[j].EndT < 0 {
		a.faults[j].EndT = e.T
		a.faults[j].HealErr = e.Err
	}
}

// closeOpen ends what the history left open at the end of the run.
func (b *builder) closeOpen() {
	a := b.a
	for _, s := range b.state {
		if s.hasTenure {
			b.raw[s.idx].EndT, b.raw[s.idx].EndReason, b.raw[s.idx].Open = a.endT, "run-end", true
		}
	}
	for i := range a.faults {
		if a.faults[i].EndT < 0 {
			a.faults[i].EndT, a.faults[i].Open = a.endT, true
		}
	}
}

// orderTenures numbers the tenures in election order (elected time, ties by seq).
func (b *builder) orderTenures() {
	a, raw := b.a, b.raw
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
	if len(a.p.Nodes) > 0 {
		a.candidates = append([]string(nil), a.p.Nodes...)
	}
	sort.Strings(a.candidates)
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

// reset and check make TenureResult the section of its checker (Results).
func (s *TenureResult) reset() {
	*s = TenureResult{Tenures: []Tenure{}, Overlaps: []Overlap{}, LeadersByNode: []NodeSum{}}
}
func (s *TenureResult) check(_ context.Context, a *analysis, rl *reasonList) {
	*s = checkTenures(a, rl)
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
