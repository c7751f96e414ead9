package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"time"
)

// ScorecardView is an assessment's scorecard page (`splitbrain assess`): one row per check,
// each with its unfenced run and, where that failed, its fenced rerun. The assess package
// fills it; this package only renders it, in the look of the report and the index.
type ScorecardView struct {
	Title, Verdict, Summary, Judged string
	Started, Elapsed, Budget        string
	Total                           string // wall time over every invocation (resumes)
	Invocations                     int
	Seed                            int64
	Command                         string
	Rows                            []ScorecardRow
	LeftOut                         []string // battery checks that do not apply, with why
}

// ScorecardRow is one check.
type ScorecardRow struct {
	Name, Purpose, Catches string
	// Grade: safe, fence-saves, unsafe, unsafe-unfenced, unknown, error, not-run.
	Grade, Verdict string
	Runs           []ScorecardRun
	Findings       []string // verdict-neutral finding codes of its runs, once each
}

// ScorecardRun is one run of a check.
type ScorecardRun struct {
	Resource, Verdict, Reason, Explanation string
	Findings                               []string
	Spec, NotRun, Error, Wall, Link        string
	Failovers, Tries                       int
	P50, P99, Max, Bound                   time.Duration
}

// Over reports whether the slowest failover exceeded the bound.
func (r ScorecardRun) Over() bool { return r.Bound > 0 && r.Failovers > 0 && r.Max > r.Bound }

// scorecardPage is what the template reads: the view plus the chart.
type scorecardPage struct {
	ScorecardView
	Chart  template.HTML
	Counts []gradeCount
}

type gradeCount struct {
	Grade string
	N     int
}

// gradeOrder is the order the page counts grades in: the good news first.
var gradeOrder = []string{"safe", "fence-saves", "unsafe-unfenced", "unsafe", "unknown", "error", "not-run"}

// gradeText is how the page names a grade.
var gradeText = map[string]string{
	"safe": "safe", "fence-saves": "safe only with its fence", "unsafe": "unsafe even with fencing",
	"unsafe-unfenced": "unsafe without fencing", "unknown": "proved nothing", "error": "harness error", "not-run": "not run",
}

func scorecardGradeText(g string) string {
	if t, ok := gradeText[g]; ok {
		return t
	}
	return g
}

// scorecardDur prints a failover figure; zero (none measured) is a dash.
func scorecardDur(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return fmtDur(int64(d))
}

// RenderScorecard writes the scorecard page to path: self-contained, no scripts, nothing
// loaded from the network.
func RenderScorecard(path string, v ScorecardView) error {
	p := scorecardPage{ScorecardView: v, Chart: failoverChart(v.Rows)}
	n := map[string]int{}
	for _, r := range v.Rows {
		n[r.Grade]++
	}
	for _, g := range gradeOrder {
		if n[g] > 0 {
			p.Counts = append(p.Counts, gradeCount{g, n[g]})
		}
	}
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, "scorecard.html.tmpl", p); err != nil {
		return fmt.Errorf("render scorecard: %w", err)
	}
	return writeAtomic(path, buf.Bytes())
}

// failoverChart draws, per run with failovers, a bar from p50 to max with a tick at p99, and
// the run's bound as a dashed mark: where a bar crosses its mark, the failover overran.
func failoverChart(rows []ScorecardRow) template.HTML {
	type bar struct {
		label string
		run   ScorecardRun
	}
	var bars []bar
	var top time.Duration
	for _, r := range rows {
		for _, run := range r.Runs {
			if run.Failovers == 0 {
				continue
			}
			label := r.Name
			if run.Resource == "fenced" {
				label += " (fenced)"
			}
			bars = append(bars, bar{label, run})
			top = max(top, run.Max, run.Bound)
		}
	}
	if len(bars) == 0 || top <= 0 {
		return ""
	}
	top = (top + time.Second - 1).Truncate(time.Second)
	const labelW, plotW, rowH, pad = 220.0, 640.0, 22.0, 28.0
	h := float64(len(bars))*rowH + pad + 8
	x := func(d time.Duration) float64 { return labelW + plotW*float64(d)/float64(top) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg class="chart" id="failover-chart" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="failover per check against its bound">`,
		labelW+plotW+20, h, labelW+plotW+20, h)
	step := chartStep(top)
	b.WriteString(`<g class="axis">`)
	for t := time.Duration(0); t <= top; t += step {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="0" y2="%.1f"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`,
			x(t), x(t), h-pad+4, x(t), h-pad+18, template.HTMLEscapeString(fmtDur(int64(t))))
	}
	b.WriteString(`</g>`)
	for i, br := range bars {
		y := float64(i)*rowH + 4
		mid := y + rowH/2
		over := ""
		if br.run.Over() {
			over = " over"
		}
		fmt.Fprintf(&b, `<text class="row-label" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, labelW-8, mid+4, template.HTMLEscapeString(br.label))
		fmt.Fprintf(&b, `<line class="row-line" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, labelW, labelW+plotW, mid, mid)
		fmt.Fprintf(&b, `<rect class="fo-bar%s" x="%.1f" y="%.1f" width="%.1f" height="8"><title>%s: p50 %s, p99 %s, max %s over %d failovers; bound %s</title></rect>`,
			over, x(br.run.P50), mid-4, max(2, x(br.run.Max)-x(br.run.P50)), template.HTMLEscapeString(br.label),
			fmtDur(int64(br.run.P50)), fmtDur(int64(br.run.P99)), fmtDur(int64(br.run.Max)), br.run.Failovers, fmtDur(int64(br.run.Bound)))
		fmt.Fprintf(&b, `<line class="fo-p99" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x(br.run.P99), x(br.run.P99), mid-7, mid+7)
		if br.run.Bound > 0 {
			fmt.Fprintf(&b, `<line class="bound" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x(br.run.Bound), x(br.run.Bound), y+1, y+rowH-1)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// chartStep is an axis step giving 4-10 ticks.
func chartStep(top time.Duration) time.Duration {
	for _, s := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute} {
		if top/s <= 10 {
			return s
		}
	}
	return 5 * time.Minute
}
