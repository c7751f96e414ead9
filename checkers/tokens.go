package checkers

import (
	"fmt"
	"sort"
)

// TokenAnomaly is a token that breaks uniqueness or real-time monotonicity.
type TokenAnomaly struct {
	Kind          string `json:"kind"`   // duplicate | not-monotone
	Tenure        int    `json:"tenure"` // the later tenure
	Node          string `json:"node"`
	Token         int64  `json:"token"`
	T             int64  `json:"t"`
	Seq           int64  `json:"seq"`
	PrevTenure    int    `json:"prev_tenure"` // the earlier tenure it conflicts with
	PrevNode      string `json:"prev_node"`
	PrevToken     int64  `json:"prev_token"`
	PrevT         int64  `json:"prev_t"`
	PrevSeq       int64  `json:"prev_seq"`
	ConcurrentRun bool   `json:"concurrent_campaign"` // the later campaign began before the earlier election completed
}

// TokenResult is checker 3's section.
type TokenResult struct {
	Anomalies  []TokenAnomaly `json:"anomalies"`
	Duplicates int            `json:"duplicate_count"`
	NotMono    int            `json:"not_monotone_count"`
	Distinct   int            `json:"distinct_tokens"`
}

// checkTokens is checker 3. Unique: a token belongs to one tenure (a node re-elected with the
// same token and no other election in between continues the same tenure and is allowed).
// Monotone: a tenure elected after another was elected carries a strictly higher token.
func checkTokens(a *analysis, rl *reasonList) TokenResult {
	res := TokenResult{Anomalies: []TokenAnomaly{}}
	ts := a.tenures // already in election order
	add := func(an TokenAnomaly) {
		if len(res.Anomalies) < detailLimit {
			res.Anomalies = append(res.Anomalies, an)
		}
		code, msg := "token-duplicate", "token %d of %s (elected %s) was already used by %s (elected %s)"
		if an.Kind == "not-monotone" {
			code, msg = "token-not-monotone", "token %d of %s (elected %s) is lower than token %d of %s (elected earlier, %s)"
			res.NotMono++
			msg = fmt.Sprintf(msg, an.Token, an.Node, fmtT(an.T, a.startT), an.PrevToken, an.PrevNode, fmtT(an.PrevT, a.startT))
		} else {
			res.Duplicates++
			msg = fmt.Sprintf(msg, an.Token, an.Node, fmtT(an.T, a.startT), an.PrevNode, fmtT(an.PrevT, a.startT))
		}
		if an.ConcurrentRun {
			msg += " (its campaign began before the earlier election completed)"
		}
		rl.add(Reason{Checker: "tokens", Code: code, Severity: SevInvalid, T: an.T, Nodes: []string{an.Node, an.PrevNode},
			Tokens: []int64{an.Token, an.PrevToken}, Seqs: []int64{an.Seq, an.PrevSeq}, Message: msg})
	}
	mk := func(kind string, cur, prev *Tenure) TokenAnomaly {
		return TokenAnomaly{Kind: kind, Tenure: cur.ID, Node: cur.Node, Token: cur.Token, T: cur.StartT, Seq: cur.StartSeq,
			PrevTenure: prev.ID, PrevNode: prev.Node, PrevToken: prev.Token, PrevT: prev.StartT, PrevSeq: prev.StartSeq,
			ConcurrentRun: cur.CampaignT < prev.StartT}
	}
	// Uniqueness.
	last := map[int64]int{}
	for i := range ts {
		if ts[i].Token <= 0 {
			continue // reported as a contract violation
		}
		if j, ok := last[ts[i].Token]; ok {
			continuation := ts[j].Node == ts[i].Node && j == i-1
			if !continuation {
				add(mk("duplicate", &ts[i], &ts[j]))
			}
		}
		last[ts[i].Token] = i
	}
	res.Distinct = len(last)
	// Monotonicity: prefix max over tenures elected strictly earlier (ties in time are concurrent).
	best := -1
	for i := 0; i < len(ts); {
		j := i
		for j < len(ts) && ts[j].StartT == ts[i].StartT {
			j++
		}
		for k := i; k < j; k++ {
			if ts[k].Token > 0 && best >= 0 && ts[k].Token < ts[best].Token {
				add(mk("not-monotone", &ts[k], &ts[best]))
			}
		}
		for k := i; k < j; k++ {
			if ts[k].Token > 0 && (best < 0 || ts[k].Token > ts[best].Token) {
				best = k
			}
		}
		i = j
	}
	sort.SliceStable(res.Anomalies, func(i, j int) bool { return res.Anomalies[i].T < res.Anomalies[j].T })
	return res
}
