package checkers

import (
	"context"
	"fmt"
	"sort"
)

// Token anomaly kinds.
const (
	AnomalyDuplicate   = "duplicate"    // two tenures share a token
	AnomalyNotMonotone = "not-monotone" // a grant sent after another returned carries a lower token (invalid)
	AnomalyOverlapping = "overlapping"  // an inversion between grants whose intervals overlap (finding)
)

// TokenAnomaly is a token that breaks uniqueness or real-time monotonicity.
type TokenAnomaly struct {
	Kind          string `json:"kind"`   // duplicate | not-monotone | overlapping
	Tenure        int    `json:"tenure"` // the later tenure
	Node          string `json:"node"`
	Token         int64  `json:"token"`
	T             int64  `json:"t"`
	GrantCallT    int64  `json:"grant_call_t"` // when its winning acquire was sent
	Seq           int64  `json:"seq"`
	PrevTenure    int    `json:"prev_tenure"` // the earlier tenure it conflicts with
	PrevNode      string `json:"prev_node"`
	PrevToken     int64  `json:"prev_token"`
	PrevT         int64  `json:"prev_t"`
	PrevSeq       int64  `json:"prev_seq"`
	ConcurrentRun bool   `json:"concurrent_campaign"` // the later grant was requested before the earlier one returned
}

// TokenResult is the tokens checker's section.
type TokenResult struct {
	Anomalies   []TokenAnomaly `json:"anomalies"`
	Duplicates  int            `json:"duplicate_count"`
	NotMono     int            `json:"not_monotone_count"`
	Overlapping int            `json:"overlapping_inversion_count"`
	Distinct    int            `json:"distinct_tokens"`
}

// reset and check make TokenResult the section of its checker (Results).
func (s *TokenResult) reset()                                               { *s = TokenResult{Anomalies: []TokenAnomaly{}} }
func (s *TokenResult) check(_ context.Context, a *analysis, rl *reasonList) { *s = checkTokens(a, rl) }

// checkTokens judges tokens on grant intervals [GrantCallT, StartT].
// Unique: a token belongs to one tenure (a node re-elected with the same token and no other
// election in between continues the same tenure and is allowed).
// Monotone: when grant A had returned (A.StartT) before grant B's winning acquire was sent
// (B.GrantCallT), B's token must be higher; that is invalid. An inversion between grants whose
// intervals overlap is a finding: either order of the two grants is possible.
func checkTokens(a *analysis, rl *reasonList) TokenResult {
	res := TokenResult{Anomalies: []TokenAnomaly{}}
	ts := a.tenures // in election order (StartT)
	add := func(an TokenAnomaly) {
		if len(res.Anomalies) < detailLimit {
			res.Anomalies = append(res.Anomalies, an)
		}
		sev, code := SevInvalid, "token-"+an.Kind
		var msg string
		switch an.Kind {
		case AnomalyDuplicate:
			res.Duplicates++
			msg = fmt.Sprintf("token %d of %s (elected %s) was already used by %s (elected %s)",
				an.Token, an.Node, fmtT(an.T, a.startT), an.PrevNode, fmtT(an.PrevT, a.startT))
		case AnomalyNotMonotone:
			res.NotMono++
			msg = fmt.Sprintf("token %d of %s (acquire sent %s, elected %s) is lower than token %d of %s, whose grant had returned before (%s)",
				an.Token, an.Node, fmtT(an.GrantCallT, a.startT), fmtT(an.T, a.startT), an.PrevToken, an.PrevNode, fmtT(an.PrevT, a.startT))
		default:
			res.Overlapping++
			sev, code = SevFinding, "token-order-overlapping"
			msg = fmt.Sprintf("token %d of %s (acquire sent %s, elected %s) is lower than token %d of %s (elected earlier, %s), but the grants overlapped in time",
				an.Token, an.Node, fmtT(an.GrantCallT, a.startT), fmtT(an.T, a.startT), an.PrevToken, an.PrevNode, fmtT(an.PrevT, a.startT))
		}
		rl.add(Reason{Checker: "tokens", Code: code, Severity: sev, T: an.T, Nodes: []string{an.Node, an.PrevNode},
			Tokens: []int64{an.Token, an.PrevToken}, Seqs: []int64{an.Seq, an.PrevSeq}, Message: msg})
	}
	mk := func(kind string, cur, prev *Tenure) TokenAnomaly {
		return TokenAnomaly{Kind: kind, Tenure: cur.ID, Node: cur.Node, Token: cur.Token, T: cur.StartT, GrantCallT: cur.GrantCallT,
			Seq: cur.StartSeq, PrevTenure: prev.ID, PrevNode: prev.Node, PrevToken: prev.Token, PrevT: prev.StartT, PrevSeq: prev.StartSeq,
			ConcurrentRun: cur.GrantCallT <= prev.StartT}
	}
	res.Distinct = tokenUniqueness(ts, func(cur, prev int) { add(mk(AnomalyDuplicate, &ts[cur], &ts[prev])) })
	sound := tokenOrder(ts, func(cur, prev int) { add(mk(AnomalyNotMonotone, &ts[cur], &ts[prev])) })
	announcedInversions(ts, func(cur, prev int) {
		if !sound[cur] {
			add(mk(AnomalyOverlapping, &ts[cur], &ts[prev]))
		}
	})
	sort.SliceStable(res.Anomalies, func(i, j int) bool { return res.Anomalies[i].T < res.Anomalies[j].T })
	return res
}

// tokenUniqueness reports every tenure whose token an earlier one already used, except a
// node's direct continuation of its own tenure; it returns the number of distinct tokens.
func tokenUniqueness(ts []Tenure, report func(cur, prev int)) int {
	last := map[int64]int{}
	for i := range ts {
		if ts[i].Token <= 0 {
			continue // reported as a contract violation
		}
		if j, ok := last[ts[i].Token]; ok && (ts[j].Node != ts[i].Node || j != i-1) {
			report(i, j)
		}
		last[ts[i].Token] = i
	}
	return len(last)
}

// tokenOrder reports each tenure B whose token is lower than that of a tenure A whose grant
// returned before B's winning acquire was sent (A.StartT < B.GrantCallT), naming the A with
// the highest token. O(n log n): a prefix maximum over election order, searched by call time.
func tokenOrder(ts []Tenure, report func(cur, prev int)) []bool {
	best := make([]int, len(ts)) // best[k]: index of the highest token among ts[0..k]
	for k := range ts {
		best[k] = k
		if k > 0 && (ts[k].Token <= 0 || ts[best[k-1]].Token >= ts[k].Token) {
			best[k] = best[k-1]
		}
	}
	bad := make([]bool, len(ts))
	for i := range ts {
		if ts[i].Token <= 0 {
			continue
		}
		n := sort.Search(len(ts), func(k int) bool { return ts[k].StartT >= ts[i].GrantCallT })
		if n == 0 {
			continue
		}
		if j := best[n-1]; ts[j].Token > ts[i].Token {
			bad[i] = true
			report(i, j)
		}
	}
	return bad
}

// announcedInversions reports tenures elected (announced) after another with a higher token:
// the candidates for an overlapping-grant finding. Ties in elected time are concurrent.
func announcedInversions(ts []Tenure, report func(cur, prev int)) {
	best := -1
	for i := 0; i < len(ts); {
		j := i
		for j < len(ts) && ts[j].StartT == ts[i].StartT {
			j++
		}
		for k := i; k < j; k++ {
			if ts[k].Token > 0 && best >= 0 && ts[k].Token < ts[best].Token {
				report(k, best)
			}
		}
		for k := i; k < j; k++ {
			if ts[k].Token > 0 && (best < 0 || ts[k].Token > ts[best].Token) {
				best = k
			}
		}
		i = j
	}
}
