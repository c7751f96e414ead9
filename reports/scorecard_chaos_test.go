//go:build chaos

package reports

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scorecardFixture is a full battery's scorecard: every grade, long explanations and
// schedules, a fenced rerun, failovers over and under their bound.
func scorecardFixture() ScorecardView {
	v := ScorecardView{Title: "candidate /home/someone/project/election/candidate_with_a_long_name.py on redis", Verdict: "invalid", Judged: "fenced",
		Started: "2026-11-25 18:00:00 UTC", Elapsed: "9m12s", Budget: "10m0s", Seed: 1,
		Command: "splitbrain assess --store redis --candidate-cmd /home/someone/project/election/candidate_with_a_long_name.py --candidate-packages python3,python3-redis --budget 10m --out assess-out",
		Summary: "candidate x on redis: INVALID; safe under 12 of 16 checks; unsafe without fencing (the fence saves it) under pause-leader, freeze-leader; UNSAFE even with fencing under handoff (token-duplicate); 1 not run (explore); failover p99 2.1 s (kill-leader) vs 7.1 s bound",
		LeftOut: []string{"zombie-window: the candidate declares no leader-work step", "store-split: the store elects no leader of its own"}}
	names := []string{"fault-free", "handoff", "kill-leader", "pause-leader", "freeze-leader", "leader-cut-silent", "leader-cut-refused", "clock-bump",
		"clock-rate", "latency", "half-open", "reset", "store-outage", "follower-cut-then-kill", "waiter-killed", "explore"}
	for i, n := range names {
		row := ScorecardRow{Name: n, Grade: "safe", Verdict: "valid", Purpose: "what the check does, in one sentence of about this length",
			Catches: "the mistake a failure here points at"}
		run := ScorecardRun{Resource: "unfenced", Verdict: "valid", Spec: "pause:target=leader,on=write:3,for=3xTTL,count=1", Wall: "31s",
			Link: "runs/" + n + "/x/report.html", Failovers: 2, P50: time.Duration(1500+100*i) * time.Millisecond,
			P99: time.Duration(2000+150*i) * time.Millisecond, Max: time.Duration(2100+200*i) * time.Millisecond, Bound: 7100 * time.Millisecond,
			Findings: []string{"unavailable-beyond-bound"}}
		row.Runs = []ScorecardRun{run}
		row.Findings = run.Findings
		switch n {
		case "handoff":
			row.Grade, row.Verdict = "unsafe", "invalid"
			bad := run
			bad.Verdict, bad.Reason, bad.Failovers = "invalid", "token-duplicate", 0
			bad.Explanation = "c3 elected with token 1 at +3.352s · c1 elected with token 1 at +12.212s · the same token twice: the resource cannot tell the two leaders apart" + strings.Repeat(" and more", 20)
			fenced := bad
			fenced.Resource = "fenced"
			row.Runs = []ScorecardRun{bad, fenced}
		case "pause-leader", "freeze-leader":
			row.Grade = "fence-saves"
			bad := run
			bad.Verdict, bad.Reason = "invalid", "stale-write-accepted"
			bad.Explanation = "c2 paused at +8.2s · c3 elected with token 2 · c2 wrote with its old token 1 · the unfenced resource accepted it"
			fenced := run
			fenced.Resource = "fenced"
			fenced.Max = 9 * time.Second
			row.Runs = []ScorecardRun{bad, fenced}
		case "explore":
			row.Grade, row.Verdict = "not-run", "unknown"
			row.Runs = []ScorecardRun{{Resource: "unfenced", Verdict: "not-run", NotRun: "budget: 40s left, the check takes about 1m0s"}}
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// TestBrowserScorecardFitsTheWindow renders a full battery's scorecard and opens it in
// headless Chromium at 1400×900, as the report and index layout test does: nothing scrolls
// sideways, and the verdict, the summary line and the start of the check table are on the
// first screen. The screenshot lands in the artifacts (and in docs/img with
// SPLITBRAIN_DOCS_IMG).
func TestBrowserScorecardFitsTheWindow(t *testing.T) {
	bin := chromium(t)
	art := artifactDir(t)
	dir := filepath.Join(art, "scorecard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := RenderScorecard(filepath.Join(dir, "scorecard.html"), scorecardFixture()); err != nil {
		t.Fatal(err)
	}
	probe := `<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}iframe{border:0;width:%dpx;height:%dpx;display:block}</style></head>
<body><iframe id="f" src="/scorecard.html"></iframe><pre id="probe">pending</pre><script>
var f=document.getElementById('f');
f.onload=function(){
  var d=f.contentDocument, r={scrollWidth:d.documentElement.scrollWidth, clientWidth:d.documentElement.clientWidth, at:{}, rows:d.querySelectorAll('#checks-table tbody tr').length};
  ['verdict','summary-line','checks-table','failover-chart'].forEach(function(id){var e=d.getElementById(id); if(e){var b=e.getBoundingClientRect(); r.at[id]=[Math.round(b.top),Math.round(b.bottom)];}});
  var wide=[]; d.querySelectorAll('body *').forEach(function(e){var b=e.getBoundingClientRect(); if(b.right>d.documentElement.clientWidth+1&&!e.closest('.chart-wrap')) wide.push(e.tagName+(e.id?'#'+e.id:'')+'.'+e.className);});
  r.wide=wide.slice(0,5); document.getElementById('probe').textContent=JSON.stringify(r);
};
</script></body></html>`
	out, base := probeInBrowser(t, bin, fmt.Sprintf(probe, windowW, windowH), http.FileServer(http.Dir(dir)), 30000)
	var l struct {
		ScrollWidth, ClientWidth, Rows int
		At                             map[string][2]int
		Wide                           []string
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("probe output %q: %v", tail(out, 500), err)
	}
	t.Logf("layout: %+v", l)
	if l.ScrollWidth > l.ClientWidth || l.ClientWidth < windowW-20 {
		t.Errorf("the scorecard scrolls sideways: scrollWidth %d > clientWidth %d (wide: %v)", l.ScrollWidth, l.ClientWidth, l.Wide)
	}
	if l.Rows != 16 {
		t.Errorf("the check table has %d rows, want 16", l.Rows)
	}
	for _, id := range []string{"verdict", "summary-line", "checks-table", "failover-chart"} {
		if _, ok := l.At[id]; !ok {
			t.Errorf("no #%s on the page", id)
		}
	}
	if tbl := l.At["checks-table"]; tbl[0] > windowH-100 {
		t.Errorf("the check table starts at %d px, not on the first %d px screen", tbl[0], windowH)
	}
	shot := filepath.Join(art, "scorecard-fixture.png")
	headless(t, bin, base+"/scorecard.html", "--hide-scrollbars", "--screenshot="+shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Errorf("screenshot %s missing or blank: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}
