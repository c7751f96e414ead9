package checkers

import (
	"context"
	"fmt"
	"sort"
)

// ContractViolation is a breach of the candidate contract or of the history's own rules.
type ContractViolation struct {
	Kind   string `json:"kind"` // malformed-output | elected-without-token | write-without-tenure | out-of-order | bad-request
	T      int64  `json:"t"`
	Node   string `json:"node,omitempty"`
	Seq    int64  `json:"seq"`
	Detail string `json:"detail"`
}

// ContractResult is checker 6's section.
type ContractResult struct {
	Violations []ContractViolation `json:"violations"`
	Count      int                 `json:"count"`
	ByKind     map[string]int      `json:"by_kind"`
	RunEnded   bool                `json:"run_ended"` // a run-end event was recorded
}

// reset and check make ContractResult the section of its checker (Results).
func (s *ContractResult) reset() {
	*s = ContractResult{Violations: []ContractViolation{}, ByKind: map[string]int{}}
}
func (s *ContractResult) check(_ context.Context, a *analysis, rl *reasonList) {
	*s = checkContract(a, rl)
}

// checkContract is checker 6. Any violation makes the history untrustworthy: it turns the
// verdict unknown unless a safety violation is proven anyway.
func checkContract(a *analysis, rl *reasonList) ContractResult {
	vs := a.contract
	for _, i := range a.writes {
		w := &a.ev[i]
		if _, inside := a.tenureAt(w.Node, w.Token, w.CallT); !inside {
			vs = append(vs, ContractViolation{Kind: "write-without-tenure", T: w.CallT, Node: w.Node, Seq: w.Seq,
				Detail: fmt.Sprintf("write %s with token %d was sent while %s held no tenure with that token", w.WriteID, w.Token, w.Node)})
		}
	}
	var lastT int64
	for _, i := range a.decisions {
		d := &a.ev[i]
		if d.T < lastT {
			vs = append(vs, ContractViolation{Kind: "out-of-order", T: d.T, Node: d.Node, Seq: d.Seq,
				Detail: fmt.Sprintf("resource decision at t=%d is earlier than the previous decision at t=%d", d.T, lastT)})
		} else {
			lastT = d.T
		}
		if d.Result == "accepted" {
			if _, inside := a.tenureAt(d.Node, d.Token, d.T); !inside && len(a.byNT[nodeToken{d.Node, d.Token}]) == 0 {
				vs = append(vs, ContractViolation{Kind: "write-without-tenure", T: d.T, Node: d.Node, Seq: d.Seq,
					Detail: fmt.Sprintf("resource accepted write %s from %s with token %d, which %s never announced as elected", d.WriteID, d.Node, d.Token, d.Node)})
			}
		}
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Seq < vs[j].Seq })
	res := ContractResult{Count: len(vs), ByKind: map[string]int{}, RunEnded: a.hasRunEnd, Violations: []ContractViolation{}}
	for _, v := range vs {
		res.ByKind[v.Kind]++
		if len(res.Violations) < detailLimit {
			res.Violations = append(res.Violations, v)
		}
		rl.add(Reason{Checker: "contract", Code: "contract-" + v.Kind, Severity: SevUnknown, T: v.T, Nodes: nonEmpty(v.Node),
			Seqs: []int64{v.Seq}, Message: fmt.Sprintf("contract violation (%s) at %s: %s", v.Kind, fmtT(v.T, a.startT), v.Detail)})
	}
	return res
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
