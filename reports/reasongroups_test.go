package reports

import (
	"testing"

	"github.com/splitbrain-chaos/splitbrain/checkers"
)

// groupReasons folds by code and tenure, keeps lone reasons apart by message, and gives the
// checkers' "N more not listed" remainder to its code's group only when that group is the
// only one of the code.
func TestGroupReasonsByCodeAndTenure(t *testing.T) {
	const s = int64(1e9)
	stale := func(node string, tok, at int64, seq int64) checkers.Reason {
		return checkers.Reason{Checker: "resource", Code: "stale-write-accepted", Severity: checkers.SevInvalid, T: at * s,
			Nodes: []string{node}, Tokens: []int64{tok, tok + 1}, Seqs: []int64{seq}, Message: "stale"}
	}
	r := &checkers.Results{}
	r.Run.StartT = 0
	r.Reasons = []checkers.Reason{
		stale("c1", 1, 5, 10), stale("c1", 1, 6, 11), stale("c2", 2, 9, 20), stale("c1", 1, 7, 12),
		{Checker: "latency", Code: "no-stable-leader", Severity: checkers.SevInvalid, Message: "no leader at the end"},
		{Checker: "latency", Code: "no-stable-leader", Severity: checkers.SevInvalid, Message: "no leader at the end"},
		{Checker: "contract", Code: "malformed", Severity: checkers.SevUnknown, Message: "line 1"},
		{Checker: "contract", Code: "malformed", Severity: checkers.SevUnknown, Message: "line 2"},
		{Checker: "resource", Code: "stale-write-accepted", Severity: checkers.SevInvalid, Count: 7, Message: "7 more stale-write-accepted reasons not listed"},
		{Checker: "contract", Code: "malformed", Severity: checkers.SevUnknown, Count: 3, Message: "3 more malformed reasons not listed"},
	}
	r.Resource.StaleAccepted = []checkers.WriteRef{{Seq: 10, WriteID: "w10"}, {Seq: 11, WriteID: "w11"}, {Seq: 12, WriteID: "w12"}, {Seq: 20, WriteID: "w20"}}
	views := reasonViews(r.Reasons, "r", 0)
	g := groupReasons(r, views, map[string]string{"stale-write-accepted": "why-stale"})
	type want struct {
		code, who          string
		count, more        int
		first, last, span  string
		firstW, lastW, why string
	}
	wants := []want{
		{"stale-write-accepted", "c1, token 1", 3, 0, "+5.000s", "+7.000s", "2s", "w10", "w12", "why-stale"},
		{"stale-write-accepted", "c2, token 2", 1, 0, "+9.000s", "+9.000s", "", "w20", "w20", "why-stale"},
		{"no-stable-leader", "", 2, 0, "", "", "", "", "", ""},
		{"malformed", "", 1, 0, "", "", "", "", "", ""},
		{"malformed", "", 1, 0, "", "", "", "", "", ""},
		{"stale-write-accepted", "", 0, 7, "", "", "", "", "", "why-stale"}, // two tenures: the remainder stands alone
		{"malformed", "", 0, 3, "", "", "", "", "", ""},
	}
	if len(g) != len(wants) {
		for _, x := range g {
			t.Logf("%+v", x)
		}
		t.Fatalf("%d groups, want %d", len(g), len(wants))
	}
	for i, w := range wants {
		x := g[i]
		got := want{x.Code, x.Who, x.Count, x.More, x.First.When, x.Last.When, x.Span, x.FirstWrite, x.LastWrite, x.WhyID}
		if got != w {
			t.Errorf("group %d = %+v, want %+v", i+1, got, w)
		}
	}

	// One tenure only: the remainder is counted on its group.
	r.Reasons = []checkers.Reason{stale("c1", 1, 5, 10), {Checker: "resource", Code: "stale-write-accepted", Severity: checkers.SevInvalid, Count: 7, Message: "7 more"}}
	g = groupReasons(r, reasonViews(r.Reasons, "r", 0), nil)
	if len(g) != 1 || g[0].Count != 1 || g[0].More != 7 {
		t.Errorf("one tenure plus remainder: %+v", g)
	}
}
