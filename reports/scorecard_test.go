package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The scorecard page: every row with its runs, the report links, the chart with the bound,
// and hostile text (a candidate's path, a reason's story) escaped, never markup.
func TestRenderScorecard(t *testing.T) {
	v := ScorecardView{Title: `candidate <script>alert(1)</script>.sh on etcd`, Verdict: "invalid", Judged: "fenced",
		Summary: "safe under 1 of 2 checks; UNSAFE even with fencing under handoff (token-duplicate)",
		Rows: []ScorecardRow{
			{Name: "kill-leader", Grade: "safe", Verdict: "valid", Runs: []ScorecardRun{{Resource: "unfenced", Verdict: "valid",
				Link: "runs/kill-leader/x/report.html", Failovers: 2, P50: 2 * time.Second, P99: 3 * time.Second, Max: 3 * time.Second, Bound: 7 * time.Second}}},
			{Name: "handoff", Grade: "unsafe", Verdict: "invalid", Catches: "a token that does not grow",
				Runs: []ScorecardRun{
					{Resource: "unfenced", Verdict: "invalid", Reason: "token-duplicate", Explanation: `c1 & c2 <b>share</b> token 1`, Link: "runs/handoff/a/report.html"},
					{Resource: "fenced", Verdict: "invalid", Reason: "token-duplicate", Link: "runs/handoff--fenced/b/report.html",
						Failovers: 1, P50: 9 * time.Second, P99: 9 * time.Second, Max: 9 * time.Second, Bound: 7 * time.Second}}},
		}}
	path := filepath.Join(t.TempDir(), "scorecard.html")
	if err := RenderScorecard(path, v); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	page := string(b)
	for _, want := range []string{`id="checks-table"`, `data-check="kill-leader"`, `data-check="handoff"`, `href="runs/handoff--fenced/b/report.html"`,
		`id="failover-chart"`, `class="bound"`, `fo-bar over`, "&lt;script&gt;", "&lt;b&gt;share&lt;/b&gt;", v.Summary} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "<b>share") {
		t.Error("hostile text reached the page as markup")
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("the page refers to the network; it must be self-contained")
	}
}
