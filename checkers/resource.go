package checkers

import (
	"context"
	"fmt"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// detailLimit caps the per-write lists in results.json; counts are always complete.
const detailLimit = 1000

// WriteRef points at one resource decision.
type WriteRef struct {
	Seq     int64  `json:"seq"`
	T       int64  `json:"t"`
	Node    string `json:"node"`
	Token   int64  `json:"token"`
	WriteID string `json:"write_id"`
	Max     int64  `json:"max"`              // highest accepted token before it (recomputed by the checker)
	Tenure  int    `json:"tenure"`           // tenure ID, -1 when the write belongs to no tenure
	Detail  string `json:"detail,omitempty"` // what is wrong, for resource bugs and interleavings
}

// ResourceResult is checker 2's section: what the writes did at the fenced resource.
type ResourceResult struct {
	Decisions        int        `json:"decisions"`
	Accepted         int        `json:"accepted"`
	Rejected         int        `json:"rejected"`
	Modes            []string   `json:"modes"` // modes seen in decisions
	StaleAccepted    []WriteRef `json:"stale_accepted"`
	StaleAcceptedN   int        `json:"stale_accepted_count"`
	StaleRejected    []WriteRef `json:"stale_rejected"`
	StaleRejectedN   int        `json:"stale_rejected_count"`
	Interleavings    []WriteRef `json:"interleavings"`
	InterleavingsN   int        `json:"interleaving_count"`
	ResourceBugs     []WriteRef `json:"resource_bugs"`
	ResourceBugsN    int        `json:"resource_bug_count"`
	Disagreements    []WriteRef `json:"disagreements"` // candidate saw a different result than the resource decided
	DisagreementsN   int        `json:"disagreement_count"`
	UnknownResolved  int        `json:"unknown_resolved"`  // candidate-unknown writes whose decision is in the log
	UnknownUnapplied int        `json:"unknown_unapplied"` // candidate-unknown writes with no decision at all
}

func addRef(list *[]WriteRef, n *int, r WriteRef) {
	*n++
	if len(*list) < detailLimit {
		*list = append(*list, r)
	}
}

// reset and check make ResourceResult the section of its checker (Results).
func (s *ResourceResult) reset() {
	*s = ResourceResult{Modes: []string{}, StaleAccepted: []WriteRef{}, StaleRejected: []WriteRef{}, Interleavings: []WriteRef{}, ResourceBugs: []WriteRef{}, Disagreements: []WriteRef{}}
}
func (s *ResourceResult) check(_ context.Context, a *analysis, rl *reasonList) {
	*s = checkResource(a, rl)
}

// checkResource is checker 2: one pass over the resource's serial decision log.
func checkResource(a *analysis, rl *reasonList) ResourceResult {
	res := ResourceResult{Modes: []string{}, StaleAccepted: []WriteRef{}, StaleRejected: []WriteRef{},
		Interleavings: []WriteRef{}, ResourceBugs: []WriteRef{}, Disagreements: []WriteRef{}}
	var max int64
	haveMax := false
	newest := -1 // newest tenure (election order) with an accepted write so far
	newestRef := WriteRef{}
	modes := map[string]bool{}
	decided := make(map[string]int, len(a.decisions)) // write_id -> index into ev
	for _, i := range a.decisions {
		e := &a.ev[i]
		res.Decisions++
		if !modes[e.Mode] {
			modes[e.Mode] = true
			res.Modes = append(res.Modes, e.Mode)
		}
		if e.WriteID != "" {
			decided[e.WriteID] = i
		}
		tid, _ := a.tenureAt(e.Node, e.Token, e.T)
		ref := WriteRef{Seq: e.Seq, T: e.T, Node: e.Node, Token: e.Token, WriteID: e.WriteID, Max: max, Tenure: tid}
		fresh := !haveMax || e.Token >= max
		// The resource's own bookkeeping must agree with the checker's running max.
		if (haveMax && e.Max != max) || e.Stale != !fresh {
			bug := ref
			bug.Detail = fmt.Sprintf("resource reported max=%d stale=%v; the decision log implies max=%d stale=%v", e.Max, e.Stale, max, !fresh)
			addRef(&res.ResourceBugs, &res.ResourceBugsN, bug)
			rl.add(Reason{Checker: "resource", Code: "resource-bug", Severity: SevUnknown, T: e.T, Nodes: []string{e.Node},
				Tokens: []int64{e.Token}, Seqs: []int64{e.Seq}, Message: "the fenced resource's log is inconsistent: " + bug.Detail})
		}
		switch e.Result {
		case history.ResultAccepted:
			res.Accepted++
			if !fresh {
				addRef(&res.StaleAccepted, &res.StaleAcceptedN, ref)
				var last *StepRef
				if res.StaleAcceptedN == 1 { // the explanation tells the first one
					last = a.lastStepBefore(e.Node, i)
				}
				rl.add(Reason{Checker: "resource", Code: "stale-write-accepted", Severity: SevInvalid, T: e.T, LastStep: last,
					Nodes: []string{e.Node}, Tokens: []int64{e.Token, max}, Seqs: []int64{e.Seq},
					Message: fmt.Sprintf("stale write accepted at %s: %s wrote %s with token %d although token %d had already been accepted (%s mode)",
						fmtT(e.T, a.startT), e.Node, e.WriteID, e.Token, max, e.Mode)})
			}
			if tid >= 0 {
				a.tenures[tid].Accepted++
				if tid < newest {
					il := ref
					il.Detail = fmt.Sprintf("tenure %d (%s, token %d) wrote after newer tenure %d (%s, token %d) had a write accepted (seq %d)",
						tid, e.Node, e.Token, newest, newestRef.Node, newestRef.Token, newestRef.Seq)
					addRef(&res.Interleavings, &res.InterleavingsN, il)
					rl.add(Reason{Checker: "resource", Code: "interleaving", Severity: SevInvalid, T: e.T,
						Nodes: []string{e.Node, newestRef.Node}, Tokens: []int64{e.Token, newestRef.Token},
						Seqs: []int64{e.Seq, newestRef.Seq}, Message: "interleaving at " + fmtT(e.T, a.startT) + ": " + il.Detail})
				} else if tid > newest {
					newest, newestRef = tid, ref
				}
			}
			if !haveMax || e.Token > max {
				max, haveMax = e.Token, true
			}
		case history.ResultRejected:
			res.Rejected++
			if tid >= 0 {
				a.tenures[tid].Rejected++
			}
			if fresh || e.Mode == ModeUnfenced {
				bug := ref
				if fresh {
					bug.Detail = fmt.Sprintf("write rejected although its token %d >= max %d", e.Token, max)
				} else {
					bug.Detail = "unfenced resource rejected a write"
				}
				addRef(&res.ResourceBugs, &res.ResourceBugsN, bug)
				rl.add(Reason{Checker: "resource", Code: "resource-bug", Severity: SevUnknown, T: e.T, Nodes: []string{e.Node},
					Tokens: []int64{e.Token}, Seqs: []int64{e.Seq}, Message: "fenced resource bug at " + fmtT(e.T, a.startT) + ": " + bug.Detail})
			} else {
				addRef(&res.StaleRejected, &res.StaleRejectedN, ref)
			}
		}
	}
	summariseStaleRejected(a, &res, rl)
	compareViews(a, &res, decided, rl)
	return res
}

// summariseStaleRejected is one finding for all the stale writes fencing turned away.
func summariseStaleRejected(a *analysis, res *ResourceResult, rl *reasonList) {
	if res.StaleRejectedN > 0 {
		first := res.StaleRejected[0]
		rl.add(Reason{Checker: "resource", Code: "stale-write-rejected", Severity: SevFinding, T: first.T, Count: res.StaleRejectedN,
			Nodes: []string{first.Node}, Tokens: []int64{first.Token}, Seqs: []int64{first.Seq},
			Message: fmt.Sprintf("fencing rejected %d stale writes (first at %s: %s token %d < max %d)",
				res.StaleRejectedN, fmtT(first.T, a.startT), first.Node, first.Token, first.Max)})
	}
}

// compareViews checks each write as the candidate reported it against the resource's
// decision for it: unknown outcomes the log resolves, and disagreements.
func compareViews(a *analysis, res *ResourceResult, decided map[string]int, rl *reasonList) {
	for _, i := range a.writes {
		w := &a.ev[i]
		di, ok := decided[w.WriteID]
		if !ok {
			if w.Result == history.ResultUnknown {
				res.UnknownUnapplied++
			}
			continue
		}
		d := &a.ev[di]
		if w.Result == history.ResultUnknown {
			res.UnknownResolved++
			continue
		}
		if d.Result != w.Result || d.Token != w.Token || d.Node != w.Node {
			addRef(&res.Disagreements, &res.DisagreementsN, WriteRef{Seq: w.Seq, T: w.T, Node: w.Node, Token: w.Token, WriteID: w.WriteID, Tenure: -1,
				Detail: fmt.Sprintf("candidate saw %s (node %s token %d), resource decided %s (node %s token %d, seq %d)",
					w.Result, w.Node, w.Token, d.Result, d.Node, d.Token, d.Seq)})
		}
	}
	if res.DisagreementsN > 0 {
		d := res.Disagreements[0]
		rl.add(Reason{Checker: "resource", Code: "result-disagreement", Severity: SevUnknown, T: d.T, Count: res.DisagreementsN,
			Nodes: []string{d.Node}, Seqs: []int64{d.Seq},
			Message: fmt.Sprintf("%d writes where the candidate and the resource disagree; first: %s %s", res.DisagreementsN, d.WriteID, d.Detail)})
	}
}

// lastStepBefore is node's last step event (other than leader-work) before event index i,
// looking back no further than its last election (an earlier tenure's step says nothing
// about this write).
func (a *analysis) lastStepBefore(node string, i int) *StepRef {
	for j := i - 1; j >= 0; j-- {
		e := &a.ev[j]
		if e.Node != node {
			continue
		}
		switch e.Kind {
		case history.KindStep:
			// leader-work is the Go runtime's mark before every write gap: it says the write
			// was coming, not what the writer's belief rested on.
			if e.Name == "leader-work" {
				continue
			}
			return &StepRef{Name: e.Name, T: e.T, Seq: e.Seq}
		case history.KindElected:
			return nil
		}
	}
	return nil
}
