package assess

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/explore"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/reports"
	"github.com/splitbrain-chaos/splitbrain/suite"
)

// runner holds what the checks of one assessment share.
type runner struct {
	opts  Options
	pool  *harness.StorePool
	steps []string
	sayMu sync.Mutex // progress lines of checks at once stay whole
	// exploreTry runs one explore try (nil: a real harness run); tests give a fake one.
	exploreTry func(ctx context.Context, cfg harness.Config, i int, spec string) explore.Try
}

// RunCheck runs one check and returns its result. A harness failure is an error and a
// result with verdict error (or invalid, when the history recorded before it proves a
// violation); the run still healed and tore down.
func RunCheck(ctx context.Context, opts Options, c Check) (CheckResult, error) {
	if err := opts.validate(); err != nil {
		return CheckResult{Check: c, Verdict: VerdictError, Error: err.Error()}, err
	}
	r := &runner{opts: opts}
	if opts.Recipe != "" {
		if d, err := candidates.Registry.Lookup(opts.Recipe); err == nil {
			r.steps = d.Describe().Steps
		}
	}
	return r.runCheck(ctx, c, 0)
}

func (r *runner) seed(c Check) int64 {
	if c.Seed != 0 {
		return c.Seed
	}
	return r.opts.seed()
}

// row is the matrix row the check stands for.
func (r *runner) row(c Check) suite.Row {
	row := suite.Row{
		Name: "assess/" + c.Key(), Store: r.opts.Store, Recipe: r.opts.Recipe, Fault: c.Fault,
		Workload: c.Workload, Resource: c.Resource, Until: c.Until, LeaderWork: c.LeaderWork,
		Packages: slices.Clone(r.opts.CandidatePackages), Tags: []string{suite.TierDefault},
	}
	if c.Fault == "" {
		row.Fault = "none"
	}
	paced := c.Paced
	row.Paced = &paced
	switch {
	case len(r.opts.CandidateCmd) > 0:
		row.Candidate = r.opts.CandidateCmd[0]
	case r.opts.CandidateImage != "":
		// The row names the image; the case's config runs it as an image (caseFor).
		row.Candidate = r.opts.CandidateImage
		row.Packages = nil
	}
	row.Timing.Duration = c.Duration
	if c.Paced && row.Until == "" {
		row.Until = fmt.Sprintf("writes=%d", watchWrites(r.ttl(), c.LeaderWork))
	}
	row.Expect.Verdict = harness.VerdictValid
	if row.Fault != "none" {
		row.Expect.FailoverMaxSpec = suite.BoundDerived
	}
	return row
}

// ttl is the candidates' lease TTL in the checks.
func (r *runner) ttl() time.Duration {
	if r.opts.TTL == 0 {
		return harness.DefaultTTL
	}
	return r.opts.TTL
}

// watchWrites is a paced check's writes= goal after the heal: 1.5×TTL of a leader's writes
// (at the default write interval), so that a zombie leader writing beside its successor
// (both count) is still seen leading well past zombieGrace after the heal. The default
// three writes let the teardown stop it 0.5 s after the heal on a quiet machine, before
// the zombie rule could tell it from a leader about to notice (measured). A work gap paces
// the writes instead (one per gap): at 50 ms a 1 s gap made 60 writes take a minute, and
// the fence checks' phase timed out short of its goal (measured 2026-11-28).
func watchWrites(ttl time.Duration, leaderWork *time.Duration) int {
	period := harness.DefaultWriteInterval
	if leaderWork != nil {
		period = max(period, *leaderWork)
	}
	return max(3, int(math.Ceil(1.5*float64(ttl)/float64(period))))
}

func (r *runner) caseFor(c Check) (suite.Case, error) {
	def := suite.Timing{Nodes: harness.DefaultNodes, TTL: r.ttl(), Warmup: 3 * time.Second,
		Recovery: 5 * time.Second, Cycles: 1}
	k, err := suite.CaseOf(r.row(c), def, r.seed(c))
	if err != nil {
		return k, err
	}
	if c.OutageTTLs > 0 && k.Row.Expect.FailoverMax > 0 {
		k.Row.Expect.FailoverMax += time.Duration(c.OutageTTLs) * k.Config.TTL
	}
	if r.opts.CandidateImage != "" {
		k.Config.CandidateCmd, k.Config.CandidatePackages, k.Config.CandidateImage = "", nil, r.opts.CandidateImage
	}
	k.Config.TestName = strings.ReplaceAll(c.Key(), "/", "--")
	k.Config.StoreRoot = filepath.Join(r.opts.OutDir, RunsDir)
	k.Config.StorePool = r.pool
	if r.opts.Started != nil {
		k.Config.Started = func(id string) { r.opts.Started("run", id) }
	}
	k.Config.Args = append(slices.Clone(r.opts.Args), "(check "+c.Key()+")")
	return k, nil
}

// RunsDir is the directory under OutDir that holds the checks' run directories.
const RunsDir = "runs"

// runCheck runs c; budget bounds an explore check's search (0 = its own default).
func (r *runner) runCheck(ctx context.Context, c Check, budget time.Duration) (CheckResult, error) {
	if c.Explore && c.Fault == "" {
		return r.runExplore(ctx, c, budget)
	}
	res := CheckResult{Check: c, Fenced: c.Resource == ResourceFenced, Seed: r.seed(c)}
	k, err := r.caseFor(c)
	if err != nil {
		res.Verdict, res.Error = VerdictError, err.Error()
		return res, err
	}
	res.Bound = k.Row.Expect.FailoverMax
	res.Spec = k.Config.Nemesis
	t0 := time.Now()
	out, err := harness.Run(ctx, k.Config)
	res.Wall = time.Since(t0)
	r.fill(&res, out)
	if err != nil {
		if ctx.Err() != nil && (out == nil || out.Verdict != harness.VerdictInvalid) {
			res.Verdict, res.NotRun = VerdictNotRun, "interrupted"
			return res, nil
		}
		res.Error = err.Error()
		if res.Verdict != harness.VerdictInvalid {
			res.Verdict = VerdictError
		}
		return res, err
	}
	return res, nil
}

// fill copies a run's outcome into res and renders its report.
func (r *runner) fill(res *CheckResult, out *harness.Outcome) {
	res.Verdict = harness.VerdictUnknown
	if out == nil {
		return
	}
	res.Verdict = out.Verdict
	res.RunDir = out.RunDir
	if out.RunDir == "" {
		return
	}
	results, err := checkers.ReadResults(filepath.Join(out.RunDir, checkers.ResultsFile))
	if err != nil {
		return
	}
	res.Reasons, res.Findings = nil, nil
	for _, x := range results.Reasons {
		res.Reasons = appendNew(res.Reasons, x.Code)
	}
	res.Unfenceable = unfenceableReasons(results)
	for _, x := range results.Findings {
		res.Findings = appendNew(res.Findings, x.Code)
	}
	if len(res.Reasons) > 0 {
		res.Reason = res.Reasons[0]
	}
	// The checkers' story of the first reason, else its message.
	for _, x := range reports.Explain(results) {
		if x.Code == res.Reason {
			res.Explanation = firstLine(x.Text)
			break
		}
	}
	if res.Explanation == "" {
		for _, x := range results.Reasons {
			if x.Code == res.Reason {
				res.Explanation = firstLine(x.Message)
				break
			}
		}
	}
	o := suite.Observe(out.Verdict, results)
	res.Failovers = len(o.Failovers)
	if n := len(o.Failovers); n > 0 {
		res.FailoverP50 = quantile(o.Failovers, 0.50)
		res.FailoverP99 = quantile(o.Failovers, 0.99)
		res.FailoverMax = o.Failovers[n-1]
	}
	applyZombie(res, zombieOf(results))
	if res.Verdict == harness.VerdictValid && res.Check.Fence != "" {
		if why := fenceUnexercised(res.Check.Fence, results); why != "" {
			res.Verdict, res.Reason, res.Explanation = harness.VerdictUnknown, ReasonFenceNotExercised, why
			res.Reasons = appendNew(res.Reasons, ReasonFenceNotExercised)
		}
	}
	if res.Bound == 0 && results.BoundNs > 0 && res.Check.Fault != "none" && res.Check.Fault != "" {
		res.Bound = time.Duration(results.BoundNs)
	}
	// The page a reviewer follows from the scorecard; a failed render leaves the results.
	_ = reports.RenderRun(out.RunDir)
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// fenceable are the violations a fenced resource prevents: writes that reach it out of token
// order. Every other invalid reason is a property of the candidate's tokens or beliefs.
var fenceable = []string{"stale-write-accepted", "interleaving", "fenced-register-illegal"}

// quantile of sorted durations, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// exploreRuns is how many tries the bounded explore check makes by default.
const exploreRuns = 2

// errEnoughTries ends an explore check's search once it has its valid tries.
var errEnoughTries = errors.New("explore: enough tries proved the schedules safe")

// runExplore runs the bounded search on the check's resource until ExploreRuns tries came
// out valid or one invalid, within budget. A try that proved nothing (a drawn trigger that
// never fired, a fault that failed: the run did not test its whole schedule) does not count:
// another is drawn, up to twice ExploreRuns tries in all.
func (r *runner) runExplore(ctx context.Context, c Check, budget time.Duration) (CheckResult, error) {
	res := CheckResult{Check: c, Fenced: c.Resource == ResourceFenced, Seed: r.seed(c)}
	base := c
	base.Explore, base.Fault, base.Paced, base.Until = false, "none", false, ""
	k, err := r.caseFor(base)
	if err != nil {
		res.Verdict, res.Error = VerdictError, err.Error()
		return res, err
	}
	cfg := k.Config
	cfg.Until, cfg.Cycles = "", 0
	vocab, err := explore.NewVocabulary(nil, 2)
	if err != nil {
		res.Verdict, res.Error = VerdictError, err.Error()
		return res, err
	}
	vocab = vocab.WithSteps(r.steps)
	runs := r.opts.ExploreRuns
	if runs == 0 {
		runs = exploreRuns
	}
	if budget <= 0 {
		budget = 3 * time.Minute
	}
	sctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	valid := 0
	t0 := time.Now()
	found, err := explore.Explore(sctx, explore.Options{
		Base: cfg, Budget: budget, MaxRuns: 2 * runs, Vocabulary: vocab, Seed: r.seed(c), Runner: r.exploreTry,
		Configure: func(i int, cfg *harness.Config) {
			cfg.Args = append(slices.Clone(r.opts.Args), fmt.Sprintf("(check explore, try %d)", i))
		},
		Started: func(i int, spec string, seed int64) {
			r.say("  explore try %d: --nemesis '%s' --seed %d", i, spec, seed)
		},
		Each: func(t explore.Try) {
			if t.Err == nil && t.Verdict == harness.VerdictValid {
				if valid++; valid >= runs {
					stop(errEnoughTries)
				}
			} else if t.Err != nil {
				r.say("  explore try %d could not run (harness error): it does not count", t.N)
			} else if t.Verdict != harness.VerdictInvalid {
				r.say("  explore try %d proved nothing (%s): it does not count", t.N, strings.Join(t.Codes, ","))
			}
		},
	})
	res.Wall = time.Since(t0)
	res.Tries = len(found.Tries)
	if err != nil { // also after tries in a row that could not run (explore.ErrHarnessErrors)
		res.Verdict, res.Error = VerdictError, err.Error()
		return res, err
	}
	var pick *explore.Try
	for i := range found.Tries {
		if t := &found.Tries[i]; pick == nil || t.Verdict == harness.VerdictValid || pick.Verdict != harness.VerdictValid {
			pick = t // the last valid try, else the last one
		}
	}
	if found.Found != nil {
		pick = found.Found
	}
	if pick == nil {
		res.Verdict, res.NotRun = VerdictNotRun, "no try fitted the budget"
		if ctx.Err() != nil {
			res.NotRun = "interrupted"
		}
		return res, nil
	}
	res.Spec, res.Seed = pick.Spec, pick.Seed
	r.fill(&res, &harness.Outcome{RunDir: pick.RunDir, Verdict: pick.Verdict})
	nothing := len(found.Tries) - valid
	switch {
	case found.Found != nil:
		res.Verdict = harness.VerdictInvalid
	case valid >= runs:
		res.Verdict = harness.VerdictValid
		if nothing > 0 {
			res.Explanation = fmt.Sprintf("%d valid tries; %d more proved nothing (%s) and did not count", valid, nothing, tallyText(found.Tally()))
		}
	case ctx.Err() != nil:
		res.Verdict, res.NotRun = VerdictNotRun, "interrupted"
	default:
		res.Verdict = harness.VerdictUnknown
		res.Reason = reasonExploreInconclusive
		res.Explanation = fmt.Sprintf("%d of the %d valid tries wanted; %d of %d tries proved nothing (%s)", valid, runs, nothing, len(found.Tries), tallyText(found.Tally()))
	}
	return res, nil
}

// reasonExploreInconclusive: too few of the explore check's tries proved something.
const reasonExploreInconclusive = "explore-inconclusive"

// tallyText is an explore tally for a reader: "valid 2, unknown 1", verdicts in order.
func tallyText(tally map[string]int) string {
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(tally)) {
		parts = append(parts, fmt.Sprintf("%s %d", v, tally[v]))
	}
	return strings.Join(parts, ", ")
}

// FencedRerun returns the check that asks whether the fence saves a check that failed on
// the unfenced resource, and whether to run it: not for a pass, and not for a violation no
// fence prevents (a duplicate token, a zombie leader), nor for a fence check (its fence is
// the device, Check.Fence). Session.Check does this itself; it is exported for callers that
// run checks one by one with RunCheck.
func FencedRerun(c Check, unfenced CheckResult) (Check, bool) {
	if unfenced.Verdict != harness.VerdictInvalid || len(unfenced.Unfenceable) > 0 || c.Resource == ResourceFenced || c.Fence != "" {
		return Check{}, false
	}
	return fencedRerun(c, unfenced), true
}

// fencedRerun is the check that asks whether the fence saves a check that failed unfenced:
// the same configuration on the fenced resource (explore: the find's schedule and seed).
func fencedRerun(c Check, unfenced CheckResult) Check {
	f := c
	f.Resource = ResourceFenced
	if c.Explore {
		f.Fault, f.Seed, f.Paced, f.Until = unfenced.Spec, unfenced.Seed, false, ""
	}
	return f
}

func (r *runner) say(format string, args ...any) {
	if r.opts.Progress != nil {
		r.sayMu.Lock()
		defer r.sayMu.Unlock()
		fmt.Fprintf(r.opts.Progress, "assess: "+format+"\n", args...)
	}
}

// runAll runs every planned check, Options.Parallel at once, starting them in battery order
// (the checks that catch the commonest mistakes first); a check waits for a free slot, then
// the budget rule decides whether it runs. A harness error is the check's row; the next
// check still runs.
func (s *Session) runAll(ctx context.Context) {
	slots := make(chan struct{}, s.opts.parallel())
	var wg sync.WaitGroup
	for _, c := range s.checks {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			s.Check(ctx, c)
		}()
	}
	wg.Wait()
}

// Run plans the battery, runs each check (unfenced, then fenced where a fence can help)
// within the budget on a Session, skips the checks an earlier interrupted assessment of the
// same out dir finished, and writes the scorecard files. It returns an error only when
// nothing could be judged (bad options, an unreadable state) or the scorecard could not be
// written; a failed check is a row of the scorecard.
func Run(ctx context.Context, opts Options) (*Scorecard, error) { return runWith(ctx, opts, nil) }

// runWith is Run with the runs made by run instead of the harness when it is not nil (tests).
func runWith(ctx context.Context, opts Options, run func(context.Context, Check, time.Duration) (CheckResult, error)) (*Scorecard, error) {
	s, err := newSession(opts, func(o Options) (*state, error) { return loadState(ctx, o) })
	if err != nil {
		return nil, err
	}
	if run != nil {
		s.run = run
	}
	for _, n := range s.st.notes {
		s.r.say("resume: %s", n)
	}
	s.r.say("%s on %s: %d checks, budget %v, judged on the %s resource, out %s",
		s.sc.Target, opts.Store, len(s.checks), s.Budget(), judgedText(opts.resource(), s.checks), opts.OutDir)
	for _, k := range s.sc.Skipped {
		s.r.say("left out %s: %s", k.Name, k.Why)
	}
	s.runAll(ctx)
	sc, err := s.Close(ctx)
	if err != nil {
		return sc, err
	}
	if ctx.Err() != nil {
		return sc, fmt.Errorf("interrupted; every started run healed and tore down; run the same command again to resume: %w", context.Cause(ctx))
	}
	return sc, nil
}

// firstEstimate is what a check is assumed to take before one has run in this invocation:
// a paced check measured 16-70 s a run on the shared 2-core machine (docs/assess.md).
const firstEstimate = 45 * time.Second

// exploreMin is the least budget left that the explore check starts with.
const exploreMin = 60 * time.Second

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runDirText(dir string) string {
	if dir == "" {
		return ""
	}
	return " " + dir
}

func resultLabel(r CheckResult) string {
	switch {
	case r.Verdict == VerdictNotRun:
		return "not run (" + r.NotRun + ")"
	case r.Verdict == VerdictError:
		return "harness error: " + firstLine(r.Error)
	case len(r.Reasons) > 0:
		return r.Verdict + " " + strings.Join(r.Reasons, ",")
	}
	return r.Verdict
}

var errStateMismatch = errors.New("state mismatch")
