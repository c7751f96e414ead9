package assess

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
)

// Session runs an assessment's checks. Run drives it over the whole battery with a resume
// state, Options.Parallel checks at once; a caller that drives the loop itself
// (splitbraintest runs each check as a go test subtest, so -run picks checks and each
// subtest's time is its check's) gets the same runs, fenced reruns, grades, budget rule,
// shared store clusters and scorecard, without the resume state.
type Session struct {
	opts   Options
	r      *runner
	sc     *Scorecard
	checks []Check
	start  time.Time
	// mu guards spent, st and sc.Results: Run calls Check from Options.Parallel goroutines.
	mu    sync.Mutex
	spent []time.Duration // wall times of the fixed checks run: the estimate of the next
	st    *state          // resume state (Run); nil: every check runs
	// unlock releases the out dir's lock (Run holds it from the state's load to Close).
	unlock func()
	// run runs one check; tests replace it (runner.runCheck otherwise).
	run func(ctx context.Context, c Check, budget time.Duration) (CheckResult, error)
}

// NewSession plans the battery for opts and starts a session on it; Close ends it.
func NewSession(opts Options) (*Session, []Check, error) {
	s, err := newSession(opts, nil)
	if err != nil {
		return nil, nil, err
	}
	return s, slices.Clone(s.checks), nil
}

// newSession plans, makes the out dir and, when resume is given, loads the state there.
func newSession(opts Options, resume func(Options) (*state, error)) (*Session, error) {
	checks, skipped, err := PlanWithSkips(opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("assess: output directory: %w", err)
	}
	s := &Session{opts: opts, checks: checks, start: time.Now()}
	if resume != nil {
		if s.unlock, err = lockOutDir(opts.OutDir); err != nil {
			return nil, err
		}
		if s.st, err = resume(opts); err != nil {
			s.unlock()
			return nil, err
		}
	}
	s.r = &runner{opts: opts, pool: harness.NewStorePool()}
	if n := opts.parallel(); n > 1 {
		s.r.pool.MaxIdle = n // one cluster per check at once
	}
	if opts.Started != nil {
		s.r.pool.Started = func(id string) { opts.Started("pool", id) }
	}
	s.run = s.r.runCheck
	s.sc = newScorecard(opts, s.start, opts.budget(), skipped)
	if opts.Recipe != "" {
		if d, err := candidates.Registry.Lookup(opts.Recipe); err == nil {
			s.r.steps = d.Describe().Steps
		}
	}
	return s, nil
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
	if err := harness.EnsureLibraryImage(ctx, log, s.opts.Recipe); err != nil {
		return err
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

// Check runs c, then its fenced rerun where a fence can help (FencedRerun; not with
// NoFencedRerun), and grades it. A run the rest of the budget has no room for, or one
// started after ctx ended, is recorded not run, never skipped: a fenced rerun that did not
// fit leaves the check "unsafe without fencing (fenced rerun not run)", unknown when judged
// on the fenced resource. The error is a harness failure; the check is then graded error
// (or invalid, when the history before the failure proves it).
func (s *Session) Check(ctx context.Context, c Check) (Graded, error) {
	u, err := s.runOne(ctx, c)
	g := Graded{Runs: []CheckResult{u}}
	var f *CheckResult
	if fc, ok := FencedRerun(c, u); ok && err == nil && !s.opts.NoFencedRerun && !s.opts.tokenless() {
		var fr CheckResult
		fr, err = s.runOne(ctx, fc)
		g.Runs = append(g.Runs, fr)
		f = &fr
	}
	s.mu.Lock()
	s.sc.Results = append(s.sc.Results, g.Runs...)
	s.mu.Unlock()
	grade := Grade(&u, f)
	g.CheckGrade = CheckGrade{Name: c.Name, Grade: grade, Verdict: Judged(grade, c.JudgedOn(s.opts.resource()))}
	return g, err
}

// label is a check's name in the progress lines: its place in the plan, and its key.
func (s *Session) label(c Check) string {
	i := slices.IndexFunc(s.checks, func(p Check) bool { return p.Name == c.Name })
	if i < 0 {
		return c.Key()
	}
	return fmt.Sprintf("[%d/%d] %s", i+1, len(s.checks), c.Key())
}

// estimate is what the next fixed check is assumed to take: before any ran, firstEstimate;
// then the slowest run of this session but its first (which also started the store cluster
// and the images' containers; with Parallel checks at once, the first Parallel runs each
// started one), so a check is started only when even a slow one fits. s.mu must be held.
func (s *Session) estimate() time.Duration {
	n := s.opts.parallel()
	switch {
	case len(s.spent) == 0:
		return firstEstimate
	case len(s.spent) <= n:
		return slices.Max(s.spent)
	}
	return slices.Max(s.spent[n:])
}

// fits says how much of the budget c may use, or why it does not fit. The explore check
// needs room for one try and gets what is left after the last try that fits: explore starts
// no try past its budget, but a started try runs to its end. A try is estimated like a fixed
// check: its faults phase ends on its goal too, within the check's 20 s (measured 17-46 s a
// try against 20-66 s a fixed check on etcd, docs/assess.md).
func (s *Session) fits(c Check) (time.Duration, string) {
	left := s.opts.budget() - time.Since(s.start)
	s.mu.Lock()
	need := s.estimate()
	s.mu.Unlock()
	explore := c.Explore && c.Fault == ""
	if explore {
		need = max(exploreMin, need)
	}
	if left < need {
		return 0, fmt.Sprintf("budget: %v left, the check takes about %v", left.Round(time.Second), need.Round(time.Second))
	}
	if explore {
		return left - need + time.Second, ""
	}
	return left, ""
}

func (s *Session) runOne(ctx context.Context, c Check) (CheckResult, error) {
	label := s.label(c)
	s.mu.Lock()
	var prev CheckResult
	if s.st != nil {
		prev = s.st.Results[c.Key()]
	}
	s.mu.Unlock()
	if prev.Done() {
		s.r.say("%s: %s earlier (%s), skipped", label, prev.Verdict, prev.RunDir)
		return prev, nil
	}
	notRun := func(why string) CheckResult {
		return CheckResult{Check: c, Fenced: c.Resource == ResourceFenced, Verdict: VerdictNotRun, NotRun: why}
	}
	if ctx.Err() != nil {
		return notRun("interrupted"), nil
	}
	left, why := s.fits(c)
	if why != "" {
		s.r.say("%s: not run: %s", label, why)
		return notRun(why), nil
	}
	s.r.say("%s (%s, %s resource) ...", label, orDash(c.Fault), c.Resource)
	res, err := s.run(ctx, c, left)
	if err != nil {
		s.r.say("%s: %v", label, err)
	}
	s.r.say("%s: %s in %v%s", label, resultLabel(res), res.Wall.Round(time.Second), runDirText(res.RunDir))
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.Explore && res.Done() {
		s.spent = append(s.spent, res.Wall)
	}
	if s.st != nil && res.Done() {
		s.st.Results[c.Key()] = res
		if err := s.st.save(); err != nil {
			s.r.say("resume state: %v", err)
		}
	}
	return res, err
}

// Close grades what ran, writes the scorecard files into OutDir (checks planned but never
// given to Check are not on it) and stops the store clusters the checks shared.
func (s *Session) Close(ctx context.Context) (*Scorecard, error) {
	if s.unlock != nil {
		defer s.unlock()
	}
	poolErr := s.r.pool.Close(context.WithoutCancel(ctx))
	if poolErr != nil {
		s.r.say("store pool: %v", poolErr)
	}
	s.sortResults()
	s.sc.Elapsed = time.Since(s.start)
	s.sc.Total, s.sc.Invocations = s.sc.Elapsed, 1
	if s.st != nil { // a resumed assessment counts every invocation
		s.st.Spent += s.sc.Elapsed
		s.st.Invocations++
		s.sc.Total, s.sc.Invocations = s.st.Spent, s.st.Invocations
		if err := s.st.save(); err != nil {
			s.r.say("resume state: %v", err)
		}
	}
	s.sc.Finish()
	s.r.say("%s", s.sc.Summary)
	if err := WriteScorecard(s.sc, s.opts.OutDir); err != nil {
		return s.sc, err
	}
	s.r.say("scorecard: %s", filepath.Join(s.opts.OutDir, ScorecardHTML))
	if poolErr != nil {
		return s.sc, fmt.Errorf("assess: store clusters: %w", poolErr)
	}
	return s.sc, nil
}

// sortResults puts the scorecard's runs in battery order, each check's unfenced run before
// its fenced rerun, whatever order checks run at once finished in.
func (s *Session) sortResults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	place := func(r CheckResult) int {
		i := slices.IndexFunc(s.checks, func(p Check) bool { return p.Name == r.Check.Name })
		if i < 0 {
			i = len(s.checks)
		}
		if r.Fenced {
			return 2*i + 1
		}
		return 2 * i
	}
	slices.SortStableFunc(s.sc.Results, func(a, b CheckResult) int { return place(a) - place(b) })
}
