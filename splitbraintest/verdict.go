package splitbraintest

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/assess"
	"github.com/splitbrain-chaos/splitbrain/reports"
)

// failure is a failed check's message: its grade, then each run with its reason, the
// explanation and the report to open.
func failure(g assess.Graded, o assess.Options) string {
	var b strings.Builder
	resource := o.Resource
	if resource == "" {
		resource = assess.ResourceFenced
	}
	fmt.Fprintf(&b, "%s: %s (verdict %s on the %s resource)", g.Name, g.Grade, g.Verdict, resource)
	if len(g.Runs) > 0 {
		if p := g.Runs[0].Check.Catches; p != "" && g.Grade != assess.GradeNotRun && g.Grade != assess.GradeError {
			fmt.Fprintf(&b, "\n  this check catches: %s", p)
		}
	}
	for _, r := range g.Runs {
		b.WriteString("\n  " + runText(r))
	}
	switch g.Grade {
	case assess.GradeNotRun:
		b.WriteString("\n  a check that did not run proved nothing: raise splitbraintest.Budget (and go test -timeout), or pick checks with splitbraintest.Checks or -run")
	case assess.GradeUnfencedOnly:
		b.WriteString("\n  the fenced rerun proved nothing, so whether a fence saves it is open")
	}
	return b.String()
}

// runText is one run of a check on one line or three: verdict and reason, explanation,
// report.
func runText(r assess.CheckResult) string {
	res := assess.ResourceUnfenced
	if r.Fenced {
		res = assess.ResourceFenced
	}
	s := fmt.Sprintf("%s run: %s", res, r.Verdict)
	switch {
	case r.Verdict == assess.VerdictNotRun:
		s += " (" + r.NotRun + ")"
	case r.Verdict == assess.VerdictError:
		s += ": " + r.Error
	case len(r.Reasons) > 0:
		s += " (" + strings.Join(r.Reasons, ", ") + ")"
	}
	if r.Explanation != "" {
		s += "\n    " + r.Explanation
	}
	if len(r.Findings) > 0 {
		s += "\n    findings: " + strings.Join(r.Findings, ", ")
	}
	if r.RunDir != "" {
		s += "\n    report: " + filepath.Join(r.RunDir, reports.ReportFile)
	}
	return s
}

// passLine is a passed check's log line: its grade, failover figures and report.
func passLine(g assess.Graded) string {
	s := g.Grade
	for _, r := range g.Runs {
		if r.Failovers > 0 {
			s += fmt.Sprintf("; failover p50 %v, p99 %v, max %v", r.FailoverP50, r.FailoverP99, r.FailoverMax)
			if r.Bound > 0 {
				s += fmt.Sprintf(" (bound %v)", r.Bound)
			}
		}
		if r.RunDir != "" {
			s += "\n  " + runText(r)
		}
	}
	return s
}
