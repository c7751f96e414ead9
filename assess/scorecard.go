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

// Scorecard files in the out dir.
const (
	ScorecardHTML  = "scorecard.html"
	ScorecardJSON  = "scorecard.json"
	ScorecardJUnit = "junit.xml"
)

// Grades of a check: what its unfenced run and, where that failed, its fenced rerun showed.
const (
	GradeSafe       = "safe"        // valid on the unfenced resource
	GradeFenceSaves = "fence-saves" // invalid unfenced, valid fenced: safe only with a fence
	GradeUnsafe     = "unsafe"      // invalid on the fenced resource too
	// GradeUnfencedOnly: invalid unfenced, the fenced rerun proved nothing (or did not run).
	GradeUnfencedOnly = "unsafe-unfenced"
	GradeUnknown      = "unknown"
	GradeError        = "error"
	GradeNotRun       = "not-run"
)

// Scorecard is an assessment's outcome: one result per run, a grade and verdict per check,
// the overall verdict and the summary line a reviewer pastes.
type Scorecard struct {
	Target   string        `json:"target"` // "recipe etcd-election", "candidate /path/x.py"
	Store    string        `json:"store"`
	Resource string        `json:"judged_on"` // the resource the verdict is judged on
	Seed     int64         `json:"seed"`
	Started  time.Time     `json:"started"`
	Elapsed  time.Duration `json:"elapsed"`
	Budget   time.Duration `json:"budget"`
	// Total is the wall time of every invocation of this assessment (resumes included),
	// Invocations their number.
	Total       time.Duration `json:"total"`
	Invocations int           `json:"invocations"`
	Args        []string      `json:"args,omitempty"`
	// Verdict: invalid when a check is unsafe on the judged resource; unknown when a check
	// proved nothing or did not run; valid when every check of the battery came out safe.
	Verdict string        `json:"verdict"`
	Summary string        `json:"summary"`
	Checks  []CheckGrade  `json:"checks"`
	Results []CheckResult `json:"results"`
	Skipped []Skipped     `json:"left_out,omitempty"`
	// Tokenless: the candidate is a library that gives no fencing token, so a check unsafe
	// unfenced has no fenced rerun and nothing could fence it.
	Tokenless bool `json:"tokenless,omitempty"`
}

// CheckGrade is one check's line of the scorecard.
type CheckGrade struct {
	Name    string `json:"name"`
	Grade   string `json:"grade"`
	Verdict string `json:"verdict"` // on the judged resource
}

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

// byCheck returns each check's unfenced result and fenced rerun (nil when none), in order.
func (s *Scorecard) byCheck() (names []string, unfenced, fenced map[string]*CheckResult) {
	unfenced, fenced = map[string]*CheckResult{}, map[string]*CheckResult{}
	for i := range s.Results {
		r := &s.Results[i]
		if r.Fenced {
			fenced[r.Check.Name] = r
			continue
		}
		names = append(names, r.Check.Name)
		unfenced[r.Check.Name] = r
	}
	return names, unfenced, fenced
}

// Grade is what a check's runs show: its unfenced result and its fenced rerun (nil when
// none ran). Judged turns a grade into the verdict on the resource an assessment is judged on.
func Grade(u, f *CheckResult) string { return grade(u, f) }

// Judged is a grade's verdict on resource (ResourceFenced or ResourceUnfenced).
func Judged(grade, resource string) string { return judged(grade, resource) }

// grade is what a check's runs show.
func grade(u, f *CheckResult) string {
	switch u.Verdict {
	case harness.VerdictValid:
		return GradeSafe
	case harness.VerdictInvalid:
		switch {
		case len(u.Unfenceable) > 0 || f != nil && len(f.Unfenceable) > 0:
			return GradeUnsafe
		case f == nil:
			return GradeUnfencedOnly
		case f.Verdict == harness.VerdictValid:
			return GradeFenceSaves
		case f.Verdict == harness.VerdictInvalid:
			return GradeUnsafe
		}
		return GradeUnfencedOnly
	case VerdictNotRun:
		return GradeNotRun
	case VerdictError:
		return GradeError
	}
	return GradeUnknown
}

// judged is a grade's verdict on the resource the assessment is judged on.
func judged(g, resource string) string {
	switch g {
	case GradeSafe:
		return harness.VerdictValid
	case GradeFenceSaves:
		if resource == ResourceFenced {
			return harness.VerdictValid
		}
		return harness.VerdictInvalid
	case GradeUnsafe:
		return harness.VerdictInvalid
	case GradeUnfencedOnly:
		if resource == ResourceFenced {
			return harness.VerdictUnknown
		}
		return harness.VerdictInvalid
	}
	return harness.VerdictUnknown
}

// finish grades every check, folds the verdict and writes the summary line.
func (s *Scorecard) finish() {
	names, unf, fen := s.byCheck()
	s.Checks = nil
	groups := map[string][]string{}
	invalid, unknown := false, false
	for _, n := range names {
		g := grade(unf[n], fen[n])
		v := judged(g, unf[n].Check.judgedOn(s.Resource))
		s.Checks = append(s.Checks, CheckGrade{Name: n, Grade: g, Verdict: v})
		label := n
		if f := fen[n]; g == GradeUnfencedOnly && f != nil && f.Verdict == VerdictNotRun {
			label += " (fenced rerun not run: " + f.NotRun + ")"
		}
		group := g
		if g == GradeUnfencedOnly && unf[n].Check.Fence != "" {
			// The device is this check's fence (no fenced rerun): "whether a fence saves it"
			// is not open, the fence it relies on failed.
			label += " (" + unf[n].Reason + ")"
			group = groupFenceFailed
		} else if g == GradeUnfencedOnly && s.Tokenless {
			// No open question either: the library has no token a resource could check.
			label += " (" + unf[n].Reason + ")"
			group = groupNoToken
		}
		if g == GradeUnsafe {
			why := unf[n]
			if f := fen[n]; f != nil && f.Verdict == harness.VerdictInvalid {
				why = f
			}
			if len(why.Unfenceable) > 0 {
				label += " (" + strings.Join(why.Unfenceable, ", ") + ")"
			} else if why.Reason != "" {
				label += " (" + why.Reason + ")"
			}
		}
		groups[group] = append(groups[group], label)
		invalid = invalid || v == harness.VerdictInvalid
		unknown = unknown || v == harness.VerdictUnknown
	}
	switch {
	case invalid:
		s.Verdict = harness.VerdictInvalid
	case unknown || len(names) == 0:
		s.Verdict = harness.VerdictUnknown
	default:
		s.Verdict = harness.VerdictValid
	}
	parts := []string{fmt.Sprintf("safe under %d of %d checks", len(groups[GradeSafe]), len(names))}
	add := func(g, text string) {
		if len(groups[g]) > 0 {
			parts = append(parts, text+" "+strings.Join(groups[g], ", "))
		}
	}
	add(GradeFenceSaves, "unsafe without fencing (the fence saves it) under")
	add(GradeUnfencedOnly, "unsafe without fencing (whether a fence saves it is open) under")
	add(groupNoToken, "UNSAFE, and no fence can save it (the library gives no fencing token), under")
	add(groupFenceFailed, "UNSAFE when its fence device misbehaves (the power-off it relied on did not protect the resource) under")
	add(GradeUnsafe, "UNSAFE even with fencing under")
	add(GradeUnknown, "nothing proved under")
	add(GradeError, "harness error under")
	if n := len(groups[GradeNotRun]); n > 0 {
		parts = append(parts, fmt.Sprintf("%d not run (%s)", n, strings.Join(groups[GradeNotRun], ", ")))
	}
	if fo := s.worstFailover(); fo != "" {
		parts = append(parts, fo)
	}
	s.Summary = fmt.Sprintf("%s on %s: %s; %s", s.Target, s.Store, strings.ToUpper(s.Verdict), strings.Join(parts, "; "))
}

// groupFenceFailed gathers, in the summary, the fence checks that failed: judged on the
// unfenced resource because the fence device is the protection under test.
const groupFenceFailed = "fence-failed"

// groupNoToken gathers the checks a token-less library failed: nothing could fence them.
const groupNoToken = "no-token"

// worstFailover names the check with the slowest failover p99 among valid runs, against its
// bound.
func (s *Scorecard) worstFailover() string {
	var worst *CheckResult
	for i := range s.Results {
		r := &s.Results[i]
		if r.Verdict != harness.VerdictValid || r.Failovers == 0 {
			continue
		}
		if worst == nil || r.FailoverP99 > worst.FailoverP99 {
			worst = r
		}
	}
	if worst == nil {
		return ""
	}
	t := fmt.Sprintf("failover p99 %s (%s)", secs(worst.FailoverP99), worst.Check.Name)
	if worst.Bound > 0 {
		t += " vs " + secs(worst.Bound) + " bound"
	}
	return t
}

func secs(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", d.Seconds()), "0"), ".") + " s"
}

// Write writes scorecard.html, scorecard.json and junit.xml into dir.
func (s *Scorecard) Write(dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, ScorecardJSON), b); err != nil {
		return err
	}
	if err := reports.WriteJUnitCases(filepath.Join(dir, ScorecardJUnit), "splitbrain.assess", s.junit()); err != nil {
		return err
	}
	return reports.RenderScorecard(filepath.Join(dir, ScorecardHTML), s.view(dir))
}

// junit is one test case per check, failing when the check is unsafe on the judged resource.
func (s *Scorecard) junit() []reports.JUnitCase {
	names, unf, fen := s.byCheck()
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

// view is the page's data: plain strings, links relative to the scorecard.
func (s *Scorecard) view(dir string) reports.ScorecardView {
	v := reports.ScorecardView{Title: s.Target + " on " + s.Store, Verdict: s.Verdict, Summary: s.Summary,
		Judged: judgedText(s.Resource, resultChecks(s.Results)), Started: s.Started.Format("2006-01-02 15:04:05 UTC"),
		Elapsed: s.Elapsed.Round(time.Second).String(), Budget: s.Budget.String(), Seed: s.Seed,
		Total: s.Total.Round(time.Second).String(), Invocations: s.Invocations,
		Command: strings.Join(s.Args, " ")}
	names, unf, fen := s.byCheck()
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
		if c.judgedOn(resource) != resource {
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
