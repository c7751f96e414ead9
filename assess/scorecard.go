package assess

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/reports"
)

func newScorecard(o Options, start time.Time, budget time.Duration, skipped []Skipped) *Scorecard {
	return &Scorecard{Target: targetText(o), Store: o.Store, Resource: o.resource(), Seed: o.seed(),
		Started: start.UTC(), Budget: budget, Args: o.Args, Skipped: skipped, Tokenless: o.tokenless()}
}

func targetText(o Options) string {
	switch {
	case len(o.CandidateCmd) > 0:
		return "candidate " + o.CandidateCmd[0]
	case o.CandidateImage != "":
		return "candidate image " + o.CandidateImage
	}
	return "recipe " + o.Recipe
}

// WriteScorecard writes scorecard.html, scorecard.json and junit.xml into dir.
func WriteScorecard(s *Scorecard, dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, ScorecardJSON), b); err != nil {
		return err
	}
	if err := reports.WriteJUnitCases(filepath.Join(dir, ScorecardJUnit), "splitbrain.assess", junitCases(s)); err != nil {
		return err
	}
	return reports.RenderScorecard(filepath.Join(dir, ScorecardHTML), scorecardView(s, dir))
}

// junitCases is one test case per check, failing when the check is unsafe on the judged resource.
func junitCases(s *Scorecard) []reports.JUnitCase {
	names, unf, fen := s.ByCheck()
	grades := map[string]CheckGrade{}
	for _, g := range s.Checks {
		grades[g.Name] = g
	}
	var out []reports.JUnitCase
	for _, n := range names {
		u, f, g := unf[n], fen[n], grades[n]
		jc := reports.JUnitCase{Name: n, Classname: "splitbrain.assess." + s.Store, Seconds: u.Wall.Seconds()}
		lines := []string{"grade: " + g.Grade + ", verdict on the " + s.Resource + " resource: " + g.Verdict, runLine(u)}
		if f != nil {
			jc.Seconds += f.Wall.Seconds()
			lines = append(lines, runLine(f))
		}
		jc.SystemOut = strings.Join(lines, "\n")
		why := u
		if f != nil && f.Verdict != harness.VerdictValid {
			why = f
		}
		text := strings.TrimSpace(why.Reason + ": " + why.Explanation + "\n" + why.RunDir)
		switch {
		case g.Verdict == harness.VerdictInvalid:
			jc.Failure = &reports.JUnitProblem{Message: g.Grade + ": " + why.Reason, Type: g.Grade, Text: text}
		case g.Grade == GradeNotRun:
			jc.Error = &reports.JUnitProblem{Message: "not run: " + u.NotRun, Type: "not-run", Text: u.NotRun}
		case g.Grade == GradeError:
			jc.Error = &reports.JUnitProblem{Message: "harness error", Type: "harness", Text: u.Error}
		case g.Verdict == harness.VerdictUnknown && f != nil && f.Verdict == VerdictNotRun:
			jc.Error = &reports.JUnitProblem{Message: "unsafe unfenced; fenced rerun not run: " + f.NotRun, Type: "not-run", Text: text}
		case g.Verdict == harness.VerdictUnknown:
			jc.Error = &reports.JUnitProblem{Message: "proved nothing: " + why.Reason, Type: "unknown", Text: text}
		}
		out = append(out, jc)
	}
	return out
}

func runLine(r *CheckResult) string {
	res := "unfenced"
	if r.Fenced {
		res = "fenced"
	}
	return fmt.Sprintf("%s run: %s %s (%s) %s", res, r.Verdict, strings.Join(r.Reasons, ","), r.Spec, r.RunDir)
}

// scorecardView is the page's data: plain strings, links relative to the scorecard.
func scorecardView(s *Scorecard, dir string) reports.ScorecardView {
	v := reports.ScorecardView{Title: s.Target + " on " + s.Store, Verdict: s.Verdict, Summary: s.Summary,
		Judged: judgedText(s.Resource, resultChecks(s.Results)), Started: s.Started.Format("2006-01-02 15:04:05 UTC"),
		Elapsed: s.Elapsed.Round(time.Second).String(), Budget: s.Budget.String(), Seed: s.Seed,
		Total: s.Total.Round(time.Second).String(), Invocations: s.Invocations,
		Command: strings.Join(s.Args, " ")}
	names, unf, fen := s.ByCheck()
	grades := map[string]CheckGrade{}
	for _, g := range s.Checks {
		grades[g.Name] = g
	}
	for _, n := range names {
		row := reports.ScorecardRow{Name: n, Grade: grades[n].Grade, Verdict: grades[n].Verdict,
			Purpose: unf[n].Check.Purpose, Catches: unf[n].Check.Catches}
		for _, r := range []*CheckResult{unf[n], fen[n]} {
			if r == nil {
				continue
			}
			run := reports.ScorecardRun{Resource: ResourceUnfenced, Verdict: r.Verdict, Reason: r.Reason,
				Explanation: r.Explanation, Findings: r.Findings, Spec: r.Spec, NotRun: r.NotRun, Error: firstLine(r.Error),
				Failovers: r.Failovers, P50: r.FailoverP50, P99: r.FailoverP99, Max: r.FailoverMax, Bound: r.Bound,
				Wall: r.Wall.Round(time.Second).String(), Tries: r.Tries}
			if r.Fenced {
				run.Resource = ResourceFenced
			}
			if r.RunDir != "" {
				if rel, err := filepath.Rel(dir, filepath.Join(r.RunDir, reports.ReportFile)); err == nil && !strings.HasPrefix(rel, "..") {
					run.Link = filepath.ToSlash(rel)
				} else if abs, err := filepath.Abs(filepath.Join(r.RunDir, reports.ReportFile)); err == nil {
					run.Link = "file://" + filepath.ToSlash(abs)
				}
			}
			row.Runs = append(row.Runs, run)
			for _, f := range r.Findings {
				row.Findings = appendNew(row.Findings, f)
			}
		}
		v.Rows = append(v.Rows, row)
	}
	for _, k := range s.Skipped {
		v.LeftOut = append(v.LeftOut, k.Name+": "+k.Why)
	}
	return v
}

// judgedText names the resource an assessment is judged on, and says so when its fence
// checks are judged on the other one (the fence device is what they test): the header said
// "fenced" over fence checks judged unfenced.
func judgedText(resource string, checks []Check) string {
	if resource != ResourceFenced {
		return resource
	}
	for _, c := range checks {
		if c.JudgedOn(resource) != resource {
			return resource + " (fence checks: unfenced, the fence device is what they test)"
		}
	}
	return resource
}

func resultChecks(rs []CheckResult) []Check {
	out := make([]Check, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Check)
	}
	return out
}

// secs is a duration in seconds with one decimal, as the summary line writes it.
func secs(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", d.Seconds()), "0"), ".") + " s"
}
