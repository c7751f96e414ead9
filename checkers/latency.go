package checkers

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// Sample outcomes.
const (
	OutcomeFailover    = "failover"    // a new tenure began after the fault started
	OutcomeLeaderKept  = "leader-kept" // the leader at fault start kept its tenure, nobody else was elected
	OutcomeNoLeader    = "no-leader"   // the leader was lost and nobody was elected before the next fault / end
	OutcomeNoLeaderYet = "no-leader-at-start"
)

// LatencySample measures one fault (or one SIGTERM handoff, kind "handoff").
type LatencySample struct {
	FaultID       int      `json:"fault_id,omitempty"`
	Kind          string   `json:"kind"`
	Targets       []string `json:"targets,omitempty"`
	StartT        int64    `json:"start_t"`
	EndT          int64    `json:"end_t"`
	TouchedLeader bool     `json:"touched_leader"` // a target was a node leading at the start
	Leader        string   `json:"leader,omitempty"`
	LeaderToken   int64    `json:"leader_token,omitempty"`
	Outcome       string   `json:"outcome"`
	NewLeader     string   `json:"new_leader,omitempty"`
	NewToken      int64    `json:"new_token,omitempty"`
	ElectionNs    int64    `json:"election_ns"`    // start → next election; -1 none
	FirstWriteNs  int64    `json:"first_write_ns"` // start → new leader's first accepted write; -1 none
	RecoveryNs    int64    `json:"recovery_ns"`    // fault end → first accepted write after it; -1 none
	ExceedsBound  bool     `json:"exceeds_bound"`
}

// Stats summarises latencies in ns (nearest-rank percentiles).
type Stats struct {
	Count    int   `json:"count"`
	MedianNs int64 `json:"median_ns"`
	P99Ns    int64 `json:"p99_ns"`
	MaxNs    int64 `json:"max_ns"`
}

// KindStats aggregates samples of one fault kind.
type KindStats struct {
	Kind           string `json:"kind"`
	Faults         int    `json:"faults"`
	Failovers      int    `json:"failovers"`
	LeaderKept     int    `json:"leader_kept"`
	NoLeader       int    `json:"no_leader"`
	Election       Stats  `json:"election"`
	FirstWrite     Stats  `json:"first_write"`
	Recovery       Stats  `json:"recovery"`
	Unavailability Stats  `json:"unavailability"` // windows overlapping faults of this kind
}

// Unavailability is a stretch with no accepted write longer than the threshold.
type Unavailability struct {
	StartT       int64 `json:"start_t"`
	EndT         int64 `json:"end_t"`
	DurationNs   int64 `json:"duration_ns"`
	FaultIDs     []int `json:"fault_ids,omitempty"` // faults overlapping it
	Open         bool  `json:"open,omitempty"`      // still unavailable at the end of observation
	ExceedsBound bool  `json:"exceeds_bound"`
}

// StableLeader is the time until a single stable leader after the final heal.
type StableLeader struct {
	HealT        int64  `json:"heal_t"` // heal phase start, else last fault end, else run start
	Found        bool   `json:"found"`
	Node         string `json:"node,omitempty"`
	Token        int64  `json:"token,omitempty"`
	StableNs     int64  `json:"stable_ns"`      // heal → from then on exactly this leader; -1 none
	FirstWriteNs int64  `json:"first_write_ns"` // heal → its first accepted write after becoming stable; -1 none
	Leaders      int    `json:"leaders_at_end"` // believers at the end of observation
}

// LatencyResult is checker 5's section.
type LatencyResult struct {
	BoundNs            int64            `json:"bound_ns"`
	ThresholdNs        int64            `json:"threshold_ns"`
	InitialElectionNs  int64            `json:"initial_election_ns"` // run start → first elected; -1 none
	Samples            []LatencySample  `json:"samples"`
	ByKind             []KindStats      `json:"by_kind"`
	Unavailability     []Unavailability `json:"unavailability"`
	UnavailableCount   int              `json:"unavailable_count"`
	UnavailableSumNs   int64            `json:"unavailable_sum_ns"`
	UnavailableMaxNs   int64            `json:"unavailable_max_ns"`
	Stable             StableLeader     `json:"stable_leader"`
	LivenessFailures   []Reason         `json:"liveness_failures"`
	LivenessOK         bool             `json:"liveness_ok"`
	AcceptedWrites     int              `json:"accepted_writes"`
	FailedFaults       int              `json:"failed_faults"` // faults that did not apply (excluded)
	ObservationStartT  int64            `json:"observation_start_t"`
	ObservationEndT    int64            `json:"observation_end_t"`
	AcceptedFromSource string           `json:"accepted_from"` // resource | candidates
}

func statsOf(xs []int64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(q float64) int64 {
		i := int(q*float64(len(s))+0.999999999) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(s) {
			i = len(s) - 1
		}
		return s[i]
	}
	return Stats{Count: len(s), MedianNs: rank(0.5), P99Ns: rank(0.99), MaxNs: s[len(s)-1]}
}

// reset and check make LatencyResult the section of its checker (Results).
func (s *LatencyResult) reset() {
	*s = LatencyResult{Samples: []LatencySample{}, ByKind: []KindStats{}, Unavailability: []Unavailability{}, LivenessFailures: []Reason{}}
}
func (s *LatencyResult) check(_ context.Context, a *analysis, rl *reasonList) {
	*s = checkLatency(a, rl)
}

// checkLatency measures failover and availability. It reads as its steps: the accepted
// writes on one timeline, a sample per fault or handoff, the stretches without accepted
// writes, liveness after each heal, figures per fault kind, and the stable leader at the end.
func checkLatency(a *analysis, rl *reasonList) LatencyResult {
	lc := &latencyCheck{a: a, rl: rl, bound: a.p.FailoverBound().Nanoseconds(), obsEnd: a.endT}
	if a.teardownT > 0 {
		lc.obsEnd = a.teardownT
	}
	lc.res = LatencyResult{BoundNs: lc.bound, ThresholdNs: a.p.UnavailableAfter().Nanoseconds(), InitialElectionNs: -1,
		Samples: []LatencySample{}, ByKind: []KindStats{}, Unavailability: []Unavailability{}, LivenessFailures: []Reason{},
		ObservationEndT: lc.obsEnd}
	lc.liveSev = SevFinding
	if a.p.requires(RequireLiveness) {
		lc.liveSev = SevInvalid
	}
	lc.applied = newFaultIndex(a.faults)
	if len(a.tenures) > 0 {
		lc.res.InitialElectionNs = a.tenures[0].StartT - a.startT
	}
	lc.acceptedTimeline()
	lc.samples(lc.triggers())
	lc.unavailability()
	lc.livenessAfterHeals()
	lc.byKind()
	lc.stableLeader()
	lc.res.LivenessOK = len(lc.res.LivenessFailures) == 0
	return lc.res
}

// accepted is one accepted write on the run's timeline, with its tenure (-1 none).
type accepted struct {
	t   int64
	tid int
}

// latencyCheck carries what the steps of checkLatency share.
type latencyCheck struct {
	a        *analysis
	rl       *reasonList
	res      LatencyResult
	bound    int64
	obsEnd   int64 // end of observation: teardown start, else the run's end
	liveSev  Severity
	applied  faultIndex
	accs     []accepted // in time order
	firstAcc []int64    // per tenure: its first accepted write, -1 none
}

// acceptedTimeline collects the accepted writes: the resource log when there is one, else
// what candidates saw.
func (lc *latencyCheck) acceptedTimeline() {
	a := lc.a
	lc.res.AcceptedFromSource = "resource"
	for _, i := range a.decisions {
		e := &a.ev[i]
		if e.Result == history.ResultAccepted {
			tid, _ := a.tenureAt(e.Node, e.Token, e.T)
			lc.accs = append(lc.accs, accepted{e.T, tid})
		}
	}
	if len(a.decisions) == 0 {
		lc.res.AcceptedFromSource = "candidates"
		for _, i := range a.writes {
			e := &a.ev[i]
			if e.Result == history.ResultAccepted {
				tid, _ := a.tenureAt(e.Node, e.Token, e.CallT)
				lc.accs = append(lc.accs, accepted{e.T, tid})
			}
		}
	}
	sort.SliceStable(lc.accs, func(i, j int) bool { return lc.accs[i].t < lc.accs[j].t })
	lc.res.AcceptedWrites = len(lc.accs)
	lc.firstAcc = make([]int64, len(a.tenures))
	for i := range lc.firstAcc {
		lc.firstAcc[i] = -1
	}
	for _, x := range lc.accs {
		if x.tid >= 0 && lc.firstAcc[x.tid] < 0 {
			lc.firstAcc[x.tid] = x.t
		}
	}
}

// firstAccAfter is the first accepted write at or after t, or -1.
func (lc *latencyCheck) firstAccAfter(t int64) int64 {
	k := sort.Search(len(lc.accs), func(i int) bool { return lc.accs[i].t >= t })
	if k == len(lc.accs) {
		return -1
	}
	return lc.accs[k].t
}

// trigger is what a latency sample measures from: an applied fault or a SIGTERM to a leader.
type trigger struct {
	s     LatencySample
	tgts  []string
	start int64
}

// triggers lists every applied fault and every SIGTERM sent to a leader, in time order,
// before the end of observation (teardown's SIGTERMs are no failovers).
func (lc *latencyCheck) triggers() []trigger {
	a := lc.a
	var trig []trigger
	for _, f := range a.faults {
		if f.Error != "" {
			lc.res.FailedFaults++
			continue
		}
		trig = append(trig, trigger{LatencySample{FaultID: f.ID, Kind: f.Kind, Targets: f.Targets, StartT: f.StartT, EndT: f.EndT}, f.Targets, f.StartT})
	}
	leading := newLeadIndex(a.tenures)
	for _, i := range a.signals {
		e := &a.ev[i]
		if e.Signal != "SIGTERM" && e.Signal != "TERM" && e.Signal != "15" {
			continue
		}
		if !leading.at(e.Node, e.T) {
			continue
		}
		trig = append(trig, trigger{LatencySample{Kind: "handoff", Targets: []string{e.Node}, StartT: e.T, EndT: e.T}, []string{e.Node}, e.T})
	}
	sort.SliceStable(trig, func(i, j int) bool { return trig[i].start < trig[j].start })
	for len(trig) > 0 && trig[len(trig)-1].start >= lc.obsEnd {
		trig = trig[:len(trig)-1]
	}
	return trig
}

// samples measures each trigger up to the next one. Triggers come in time order, so one
// sweep keeps the tenures open at each start (begun at or before it, not ended before it) in
// a heap by end: O((tenures + triggers) log tenures) plus the open set per trigger.
func (lc *latencyCheck) samples(trig []trigger) {
	a := lc.a
	starts := make([]int64, len(a.tenures))
	for i := range a.tenures {
		starts[i] = a.tenures[i].StartT
	}
	open := &tenureEnds{ts: a.tenures}
	nextTenure := 0
	for k := range trig {
		s := trig[k].s
		winEnd := lc.obsEnd
		if k+1 < len(trig) && trig[k+1].start < winEnd {
			winEnd = trig[k+1].start
		}
		for nextTenure < len(starts) && starts[nextTenure] <= s.StartT {
			heap.Push(open, nextTenure)
			nextTenure++
		}
		for open.Len() > 0 && a.tenures[open.idx[0]].EndT < s.StartT {
			heap.Pop(open)
		}
		// Leader at the start: the newest tenure open then (tenures are in start order).
		lead := -1
		for _, i := range open.idx {
			lead = max(lead, i)
			if slices.Contains(trig[k].tgts, a.tenures[i].Node) {
				s.TouchedLeader = true
			}
		}
		if lead >= 0 {
			s.Leader, s.LeaderToken = a.tenures[lead].Node, a.tenures[lead].Token
		}
		lc.outcome(&s, lead, starts, winEnd)
		if w := lc.firstAccAfter(s.EndT); w >= 0 {
			s.RecoveryNs = w - s.EndT
		}
		s.ExceedsBound = (s.ElectionNs > lc.bound) || (s.RecoveryNs > lc.bound) || (s.Outcome == OutcomeNoLeader && winEnd-s.StartT > lc.bound)
		lc.res.Samples = append(lc.res.Samples, s)
	}
}

// outcome classifies one sample. A failover is the first election of another node after the
// start; the leader re-winning its own lease (c2 → c2, e.g. after a clock fault) is not one.
// A leader whose process died (killed, crashed, restarted) is gone, though: its restarted
// process winning is a new leader as much as another node would be, so that is a failover.
func (lc *latencyCheck) outcome(s *LatencySample, lead int, starts []int64, winEnd int64) {
	a := lc.a
	s.ElectionNs, s.FirstWriteNs, s.RecoveryNs = -1, -1, -1
	sameLeader := func(i int) bool {
		return lead >= 0 && a.tenures[i].Node == s.Leader && !processDied(a.tenures[lead], s.StartT)
	}
	newT, reElected := -1, false
	for i := sort.Search(len(starts), func(i int) bool { return starts[i] > s.StartT }); i < len(starts) && starts[i] < winEnd; i++ {
		if sameLeader(i) {
			reElected = true
			continue
		}
		newT = i
		break
	}
	switch {
	case newT >= 0:
		s.Outcome = OutcomeFailover
		s.NewLeader, s.NewToken = a.tenures[newT].Node, a.tenures[newT].Token
		s.ElectionNs = a.tenures[newT].StartT - s.StartT
		for i := newT; i < len(starts) && starts[i] < winEnd; i++ {
			if sameLeader(i) {
				continue
			}
			if f := lc.firstAcc[i]; f >= 0 && (s.FirstWriteNs < 0 || f-s.StartT < s.FirstWriteNs) {
				s.FirstWriteNs = f - s.StartT
			}
		}
	case lead < 0:
		s.Outcome = OutcomeNoLeaderYet
	case reElected || a.tenures[lead].EndT >= winEnd:
		s.Outcome = OutcomeLeaderKept
	default:
		s.Outcome = OutcomeNoLeader
	}
}

// processDied: the tenure ended at or after t because its candidate's process went away.
func processDied(tn Tenure, t int64) bool {
	switch tn.EndReason {
	case "process-exit", "sigkill", "restart":
		return tn.EndT >= t
	}
	return false
}

// live records a liveness failure (a finding unless liveness is required).
func (lc *latencyCheck) live(code string, t, endT int64, msg string) {
	r := Reason{Checker: "latency", Code: code, Severity: lc.liveSev, T: t, EndT: endT, Message: msg}
	lc.res.LivenessFailures = append(lc.res.LivenessFailures, r)
	lc.rl.add(r)
}

// unavailability lists the stretches between accepted writes longer than the threshold.
func (lc *latencyCheck) unavailability() {
	a, res := lc.a, &lc.res
	if len(lc.accs) == 0 {
		if len(a.ev) > 0 {
			lc.live("no-accepted-write", a.startT, lc.obsEnd, "no write was accepted during the whole run")
		}
		return
	}
	res.ObservationStartT = lc.accs[0].t
	prev := lc.accs[0].t
	for _, x := range lc.accs[1:] {
		if x.t > lc.obsEnd {
			break
		}
		if x.t-prev > res.ThresholdNs {
			lc.addWindow(prev, x.t, false)
		}
		prev = x.t
	}
	if lc.obsEnd-prev > res.ThresholdNs {
		lc.addWindow(prev, lc.obsEnd, true)
	}
}

// addWindow records one stretch without accepted writes. The cost of a fault while it lasts
// (a paused PostgreSQL leader keeps its lock) is reported, not judged: liveness is about
// coming back after the heal. A stall while no fault is in effect is judged: the part of the
// window before its first fault (all of it without one) must stay within the bound.
func (lc *latencyCheck) addWindow(from, to int64, open bool) {
	a, res, bound := lc.a, &lc.res, lc.bound
	u := Unavailability{StartT: from, EndT: to, DurationNs: to - from, Open: open, ExceedsBound: to-from > bound,
		FaultIDs: lc.applied.overlapping(from, to)}
	res.UnavailableCount++
	res.UnavailableSumNs += u.DurationNs
	res.UnavailableMaxNs = max(res.UnavailableMaxNs, u.DurationNs)
	if len(res.Unavailability) < detailLimit {
		res.Unavailability = append(res.Unavailability, u)
	}
	if !u.ExceedsBound {
		return
	}
	lc.rl.add(Reason{Checker: "latency", Code: "unavailable-beyond-bound", Severity: SevFinding, T: from, EndT: to,
		Message: fmt.Sprintf("no write accepted for %s from %s (bound %s, faults %v)",
			fmtD(u.DurationNs), fmtT(from, a.startT), fmtD(bound), u.FaultIDs)})
	if quietTo := lc.applied.firstInEffect(from, to); quietTo-from > bound {
		lc.live("unavailable-without-fault", from, quietTo, fmt.Sprintf("no write accepted for %s from %s while no fault was in effect (bound %s)",
			fmtD(quietTo-from), fmtT(from, a.startT), fmtD(bound)))
	}
}

// livenessAfterHeals: whenever no fault is in effect any more, an accepted write must follow
// within the bound (unless the next fault starts first).
func (lc *latencyCheck) livenessAfterHeals() {
	a := lc.a
	for _, q := range lc.applied.quietFrom(lc.obsEnd) {
		if q.to-q.from <= lc.bound {
			continue
		}
		if w := lc.firstAccAfter(q.from); w < 0 || w-q.from > lc.bound {
			msg := fmt.Sprintf("no write accepted within %s after the faults healed at %s", fmtD(lc.bound), fmtT(q.from, a.startT))
			if w >= 0 {
				msg = fmt.Sprintf("the first write after the faults healed at %s was accepted %s later, beyond the bound %s",
					fmtT(q.from, a.startT), fmtD(w-q.from), fmtD(lc.bound))
			}
			lc.live("no-leader-after-heal", q.from, min(q.from+lc.bound, q.to), msg)
		}
	}
}

// byKind aggregates the samples and the unavailability windows per fault kind.
func (lc *latencyCheck) byKind() {
	kinds := map[string]*KindStats{}
	var order []string
	el, fw, rc, un := map[string][]int64{}, map[string][]int64{}, map[string][]int64{}, map[string][]int64{}
	for _, s := range lc.res.Samples {
		ks := kinds[s.Kind]
		if ks == nil {
			ks = &KindStats{Kind: s.Kind}
			kinds[s.Kind] = ks
			order = append(order, s.Kind)
		}
		ks.Faults++
		switch s.Outcome {
		case OutcomeFailover:
			ks.Failovers++
		case OutcomeLeaderKept:
			ks.LeaderKept++
		case OutcomeNoLeader:
			ks.NoLeader++
		}
		if s.ElectionNs >= 0 {
			el[s.Kind] = append(el[s.Kind], s.ElectionNs)
		}
		if s.FirstWriteNs >= 0 {
			fw[s.Kind] = append(fw[s.Kind], s.FirstWriteNs)
		}
		if s.RecoveryNs >= 0 {
			rc[s.Kind] = append(rc[s.Kind], s.RecoveryNs)
		}
	}
	kindOf := map[int]string{}
	for _, f := range lc.a.faults {
		kindOf[f.ID] = f.Kind
	}
	for _, u := range lc.res.Unavailability {
		seen := map[string]bool{}
		for _, id := range u.FaultIDs {
			if k := kindOf[id]; !seen[k] {
				seen[k] = true
				un[k] = append(un[k], u.DurationNs)
			}
		}
	}
	sort.Strings(order)
	for _, k := range order {
		ks := kinds[k]
		ks.Election, ks.FirstWrite, ks.Recovery, ks.Unavailability = statsOf(el[k]), statsOf(fw[k]), statsOf(rc[k]), statsOf(un[k])
		lc.res.ByKind = append(lc.res.ByKind, *ks)
	}
}

// stableLeader: after the final heal, one leader must remain, and within the bound.
func (lc *latencyCheck) stableLeader() {
	a, obsEnd := lc.a, lc.obsEnd
	st := StableLeader{StableNs: -1, FirstWriteNs: -1, HealT: a.startT}
	if a.healT > 0 {
		st.HealT = a.healT
	} else {
		for _, f := range a.faults {
			if f.Error == "" && f.EndT > st.HealT {
				st.HealT = f.EndT
			}
		}
	}
	var atEnd []int
	for i := range a.tenures {
		if a.tenures[i].StartT < obsEnd && a.tenures[i].EndT >= obsEnd {
			atEnd = append(atEnd, i)
		}
	}
	st.Leaders = len(atEnd)
	switch {
	case len(atEnd) == 1:
		l := &a.tenures[atEnd[0]]
		s := max(st.HealT, l.StartT)
		for i := range a.tenures {
			if i != atEnd[0] && a.tenures[i].EndT > s && a.tenures[i].EndT <= obsEnd {
				s = a.tenures[i].EndT
			}
		}
		st.Found, st.Node, st.Token, st.StableNs = true, l.Node, l.Token, s-st.HealT
		for _, x := range lc.accs {
			if x.t >= s && x.tid == l.ID {
				st.FirstWriteNs = x.t - st.HealT
				break
			}
		}
		if st.StableNs > lc.bound {
			lc.live("slow-stable-leader", st.HealT, s, fmt.Sprintf("a single stable leader (%s, token %d) returned %s after the final heal, beyond the bound %s",
				l.Node, l.Token, fmtD(st.StableNs), fmtD(lc.bound)))
		}
	case len(a.ev) > 0:
		lc.live("no-stable-leader", st.HealT, obsEnd, fmt.Sprintf("%d candidates believed they led at the end of observation (%s); want exactly one stable leader after the final heal",
			len(atEnd), fmtT(obsEnd, a.startT)))
	}
	lc.res.Stable = st
}

// leadIndex answers "did node hold a tenure at t" by binary search over the node's tenures.
type leadIndex struct {
	ts     []Tenure
	byNode map[string][]int   // tenure indices per node, in start order
	maxEnd map[string][]int64 // running maximum of EndT over byNode's prefix
}

func newLeadIndex(ts []Tenure) leadIndex {
	li := leadIndex{ts: ts, byNode: map[string][]int{}, maxEnd: map[string][]int64{}}
	for i := range ts {
		li.byNode[ts[i].Node] = append(li.byNode[ts[i].Node], i)
	}
	for n, idx := range li.byNode {
		li.maxEnd[n] = runningMax(len(idx), func(j int) int64 { return ts[idx[j]].EndT })
	}
	return li
}

// runningMax returns m with m[i] = max(end(0), ..., end(i)): over intervals sorted by start,
// every interval before i+1 has ended by t exactly when m[i] <= t.
func runningMax(n int, end func(i int) int64) []int64 {
	m := make([]int64, n)
	for i := range m {
		m[i] = end(i)
		if i > 0 {
			m[i] = max(m[i], m[i-1])
		}
	}
	return m
}

// at reports whether node held a tenure at t (StartT <= t < EndT).
func (li leadIndex) at(node string, t int64) bool {
	idx, ends := li.byNode[node], li.maxEnd[node]
	k := sort.Search(len(idx), func(j int) bool { return li.ts[idx[j]].StartT > t }) - 1
	for ; k >= 0 && ends[k] > t; k-- {
		if li.ts[idx[k]].EndT > t {
			return true
		}
	}
	return false
}

// tenureEnds is a min-heap of tenure indices by end time.
type tenureEnds struct {
	ts  []Tenure
	idx []int
}

func (h *tenureEnds) Len() int           { return len(h.idx) }
func (h *tenureEnds) Less(i, j int) bool { return h.ts[h.idx[i]].EndT < h.ts[h.idx[j]].EndT }
func (h *tenureEnds) Swap(i, j int)      { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *tenureEnds) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *tenureEnds) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

// faultIndex holds the applied faults in start order with a running maximum of their ends.
type faultIndex struct {
	fs     []FaultWindow
	maxEnd []int64
}

func newFaultIndex(all []FaultWindow) faultIndex {
	var fi faultIndex
	for _, f := range all {
		if f.Error == "" {
			fi.fs = append(fi.fs, f)
		}
	}
	sort.SliceStable(fi.fs, func(i, j int) bool { return fi.fs[i].StartT < fi.fs[j].StartT })
	fi.maxEnd = runningMax(len(fi.fs), func(i int) int64 { return fi.fs[i].EndT })
	return fi
}

// each calls fn for every fault in effect at some moment of (from, to).
func (fi faultIndex) each(from, to int64, fn func(f *FaultWindow)) {
	k := sort.Search(len(fi.fs), func(i int) bool { return fi.fs[i].StartT >= to }) - 1
	for ; k >= 0 && fi.maxEnd[k] > from; k-- {
		if fi.fs[k].EndT > from {
			fn(&fi.fs[k])
		}
	}
}

// overlapping lists the ids of faults in effect at some moment of (from, to), ascending.
func (fi faultIndex) overlapping(from, to int64) []int {
	var ids []int
	fi.each(from, to, func(f *FaultWindow) { ids = append(ids, f.ID) })
	slices.Sort(ids)
	return ids
}

// firstInEffect is the first moment in [from, to) at which a fault is in effect, or to.
func (fi faultIndex) firstInEffect(from, to int64) int64 {
	first := to
	fi.each(from, to, func(f *FaultWindow) { first = min(first, max(f.StartT, from)) })
	return first
}

// quiet is a stretch with no fault in effect, from a heal to the next fault or the end.
type quiet struct{ from, to int64 }

// quietFrom lists the stretches that begin when the last fault in effect healed, up to the
// next fault's start or end (a fault that never healed ends none).
func (fi faultIndex) quietFrom(end int64) []quiet {
	var qs []quiet
	seen := map[int64]bool{}
	for _, f := range fi.fs {
		if f.Open || f.HealErr != "" || f.EndT >= end || seen[f.EndT] {
			continue // a failed heal is no heal: the verdict is unknown (heal-failed) instead
		}
		k := sort.Search(len(fi.fs), func(i int) bool { return fi.fs[i].StartT > f.EndT })
		if k == 0 || fi.maxEnd[k-1] != f.EndT { // k == 0: a heal stamped before its start
			continue // another fault is still in effect at this heal
		}
		seen[f.EndT] = true
		to := end
		if k < len(fi.fs) {
			to = fi.fs[k].StartT
		}
		qs = append(qs, quiet{f.EndT, to})
	}
	slices.SortFunc(qs, func(a, b quiet) int { return cmp.Compare(a.from, b.from) })
	return qs
}
