package splitbraintest

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/assess/assessproto"
	"github.com/splitbrain-chaos/splitbrain/assess/scorecard"
)

// failure is a failed check's message: its grade, then each run with its reason, the
// explanation and the report to open.
func failure(g scorecard.Graded, resource string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (verdict %s on the %s resource)", g.Name, g.Grade, g.Verdict, resource)
	if len(g.Runs) > 0 {
		if p := g.Runs[0].Check.Catches; p != "" && g.Grade != scorecard.GradeNotRun && g.Grade != scorecard.GradeError {
			fmt.Fprintf(&b, "\n  this check catches: %s", p)
		}
	}
	for _, r := range g.Runs {
		b.WriteString("\n  " + runText(r))
	}
	switch g.Grade {
	case scorecard.GradeNotRun:
		b.WriteString("\n  a check that did not run proved nothing: raise splitbraintest.Budget (and go test -timeout), or pick checks with splitbraintest.Checks or -run")
	case scorecard.GradeUnfencedOnly:
		b.WriteString("\n  the fenced rerun proved nothing, so whether a fence saves it is open")
	}
	return b.String()
}

// runText is one run of a check on one line or three: verdict and reason, explanation,
// report.
func runText(r scorecard.CheckResult) string {
	res := scorecard.ResourceUnfenced
	if r.Fenced {
		res = scorecard.ResourceFenced
	}
	s := fmt.Sprintf("%s run: %s", res, r.Verdict)
	switch {
	case r.Verdict == scorecard.VerdictNotRun:
		s += " (" + r.NotRun + ")"
	case r.Verdict == scorecard.VerdictError:
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
		s += "\n    report: " + filepath.Join(r.RunDir, assessproto.ReportFile)
	}
	return s
}

// passLine is a passed check's log line: its grade, failover figures and report.
func passLine(g scorecard.Graded) string {
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
