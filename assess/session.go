package assess

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
)

// Session runs an assessment's checks one at a time for a caller that drives the loop itself
// (splitbraintest runs each check as a go test subtest, so -run picks checks and each
// subtest's time is its check's): the runs, fenced reruns, grades, budget rule, shared
// store clusters and scorecard of Run, without the resume state.
type Session struct {
	opts  Options
	r     *runner
	sc    *Scorecard
	start time.Time
	spent []time.Duration // wall times of the fixed checks run: the estimate of the next
}

// Graded is one check's outcome: its grade and verdict on the judged resource (Verdict
// valid is the only pass) and its runs, the unfenced one first, then the fenced rerun.
type Graded struct {
	CheckGrade
	Runs []CheckResult
}

// NewSession plans the battery for opts and starts a session on it; Close ends it.
func NewSession(opts Options) (*Session, []Check, error) {
	checks, skipped, err := PlanWithSkips(opts)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("assess: output directory: %w", err)
	}
	s := &Session{opts: opts, r: &runner{opts: opts, pool: harness.NewStorePool()}, start: time.Now()}
	s.sc = newScorecard(opts, s.start, opts.budget(), skipped)
	if opts.Recipe != "" {
		if d, err := candidates.Registry.Lookup(opts.Recipe); err == nil {
			s.r.steps = d.Describe().Steps
		}
	}
	return s, checks, nil
}

// EnsureImages builds (or finds) the images the checks need, once, before the first check:
// the caller reports a failure once, and the first build's minutes stay out of the budget,
// whose clock starts when this returns.
func (s *Session) EnsureImages(ctx context.Context, log io.Writer) error {
	profile, roles, err := harness.ImageRoles(harness.Config{Store: s.opts.Store})
	if err != nil {
		return err
	}
	if err := s.r.pool.EnsureImages(ctx, profile, log, roles...); err != nil {
		return fmt.Errorf("images (%s profile): %w", profile, err)
	}
	if len(s.opts.CandidatePackages) > 0 {
		if _, err := images.EnsurePackages(ctx, images.EnsureOptions{Log: log}, s.opts.CandidatePackages); err != nil {
			return fmt.Errorf("candidate image with %s: %w", strings.Join(s.opts.CandidatePackages, ","), err)
		}
	}
	s.start = time.Now()
	s.sc.Started = s.start.UTC()
	return nil
}

// SetBudget replaces the budget, still counted from the end of EnsureImages (or from
// NewSession): a caller fits it to its own deadline once the images are there.
func (s *Session) SetBudget(d time.Duration) {
	s.opts.Budget = d
	s.sc.Budget = s.opts.budget()
}

// Budget is the session's budget (DefaultBudget when Options.Budget was 0).
func (s *Session) Budget() time.Duration { return s.opts.budget() }

// Check runs c, then its fenced rerun when c was invalid unfenced (unless NoFencedRerun),
// and grades it. A check the rest of the budget has no room for, or one started after ctx
// ended, is recorded not run, never skipped. The error is a harness failure; the check is
// then graded error (or invalid, when the history before the failure proves it).
func (s *Session) Check(ctx context.Context, c Check) (Graded, error) {
	u, err := s.runOne(ctx, c)
	g := Graded{Runs: []CheckResult{u}}
	var f *CheckResult
	if err == nil && u.Verdict == harness.VerdictInvalid && !s.opts.NoFencedRerun {
		var fr CheckResult
		fr, err = s.runOne(ctx, fencedRerun(c, u))
		g.Runs = append(g.Runs, fr)
		f = &fr
	}
	s.sc.Results = append(s.sc.Results, g.Runs...)
	grade := grade(&u, f)
	g.CheckGrade = CheckGrade{Name: c.Name, Grade: grade, Verdict: judged(grade, s.opts.resource())}
	return g, err
}

func (s *Session) runOne(ctx context.Context, c Check) (CheckResult, error) {
	notRun := func(why string) CheckResult {
		return CheckResult{Check: c, Fenced: c.Resource == ResourceFenced, Verdict: VerdictNotRun, NotRun: why}
	}
	if ctx.Err() != nil {
		return notRun("interrupted"), nil
	}
	left := s.opts.budget() - time.Since(s.start)
	need := firstEstimate
	if len(s.spent) > 0 {
		var sum time.Duration
		for _, d := range s.spent {
			sum += d
		}
		need = sum / time.Duration(len(s.spent))
	}
	if c.Explore && c.Fault == "" {
		need = exploreMin
	}
	if left < need {
		why := fmt.Sprintf("budget: %v left, the check takes about %v", left.Round(time.Second), need.Round(time.Second))
		s.r.say("%s: not run: %s", c.Key(), why)
		return notRun(why), nil
	}
	s.r.say("%s (%s, %s resource) ...", c.Key(), orDash(c.Fault), c.Resource)
	res, err := s.r.runCheck(ctx, c, left)
	if !c.Explore && res.done() {
		s.spent = append(s.spent, res.Wall)
	}
	s.r.say("%s: %s in %v%s", c.Key(), resultLabel(res), res.Wall.Round(time.Second), runDirText(res.RunDir))
	return res, err
}

// Close grades what ran, writes the scorecard files into OutDir (checks planned but never
// given to Check are not on it) and stops the store clusters the checks shared.
func (s *Session) Close(ctx context.Context) (*Scorecard, error) {
	poolErr := s.r.pool.Close(context.WithoutCancel(ctx))
	s.sc.Elapsed = time.Since(s.start)
	s.sc.Total, s.sc.Invocations = s.sc.Elapsed, 1 // a session never resumes
	s.sc.finish()
	s.r.say("%s", s.sc.Summary)
	if err := s.sc.Write(s.opts.OutDir); err != nil {
		return s.sc, err
	}
	s.r.say("scorecard: %s", filepath.Join(s.opts.OutDir, ScorecardHTML))
	if poolErr != nil {
		return s.sc, fmt.Errorf("assess: store clusters: %w", poolErr)
	}
	return s.sc, nil
}
