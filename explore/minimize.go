package explore

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/shrink"
)

// MinimizeOptions control what happens to a find: the shrink, then the reproduction runs.
type MinimizeOptions struct {
	// ShrinkBudget bounds the shrink (0: no shrink; the find itself is reproduced).
	ShrinkBudget time.Duration
	ShrinkTries  int // tries per smaller case (default 2)
	// Repro re-runs the one-line reproduction this many times to measure its rate.
	Repro int
	// Configure adjusts every shrink try and reproduction run (test name, progress).
	Configure func(c *harness.Config)
	Trying    func(step int, move string, size shrink.Size, try int)
	Step      func(shrink.Step)
	Replayed  func(i int, o shrink.Outcome)
}

// Minimized is a find made small: the shrink, the one-line run and how often it reproduces.
type Minimized struct {
	Shrink shrink.Result
	Shrunk bool // a shrink ran
	// RunLine is `splitbrain run ...` with the minimal schedule as --nemesis; Exact says
	// the spec pins every seeded choice (otherwise it needs the same --seed, which it has).
	RunLine string
	Exact   bool
	Repro   []shrink.Outcome
	// Reproduced of len(Repro) runs were invalid with one of the find's codes.
	Reproduced int
	// Cause is the cause read from the last failing run of the minimal schedule (the last
	// kept shrink try, else the first reproduction that failed); nil when none failed. A
	// find's class is a reading of its schedule; after the shrink dropped the fault it
	// rested on, this one tells what the bug needs.
	Cause *checkers.Cause
}

// Reclassified says the shrink changed the find's cause class: the shrunk line's failing run
// showed the violation without the fault the first class rested on before it (dropped, or
// come later), so the bug does not need it (issue 48: a zk-suspended find was a clock-step
// one until the shrink dropped the clock bump; its line fails on its own logic). A class only
// moves that way, towards own-logic (later in checkers.CauseClasses): the find's own run is
// a witness that the bug shows without the fault the other class names (a dynamodb-wallclock
// find, own-logic, whose line's runs stepped a clock before failing was re-classed
// clock-step and merged into the clock-step find before this rule).
func (m Minimized) Reclassified(found *checkers.Cause) bool {
	if found == nil || m.Cause == nil {
		return false
	}
	return slices.Index(checkers.CauseClasses, m.Cause.Class) > slices.Index(checkers.CauseClasses, found.Class)
}

// causeOf reads the cause of the invalid run in dir (nil when it has none).
func causeOf(dir string) *checkers.Cause {
	if dir == "" {
		return nil
	}
	res, err := checkers.ReadResults(filepath.Join(dir, harness.ResultsFile))
	if err != nil || res.Verdict != harness.VerdictInvalid {
		return nil
	}
	if res.Cause != nil {
		return res.Cause
	}
	c := checkers.AttributeCause(res)
	return &c
}

// Rate is "4/5 (80%)" or "not measured"; runs that could not run (a harness error, e.g. a
// line the nemesis refuses) are not in the rate and are said so: "0/0, 5 of 5 runs could
// not run".
func (m Minimized) Rate() string {
	if len(m.Repro) == 0 {
		return "not measured"
	}
	ran := m.ran()
	rate := fmt.Sprintf("%d/%d", m.Reproduced, ran)
	if ran > 0 {
		rate += fmt.Sprintf(" (%d%%)", 100*m.Reproduced/ran)
	}
	if n := len(m.Repro) - ran; n > 0 {
		rate += fmt.Sprintf(", %d of %d runs could not run", n, len(m.Repro))
	}
	return rate
}

// ran counts the reproduction runs that ran (no harness error).
func (m Minimized) ran() int {
	n := 0
	for _, o := range m.Repro {
		if o.Err == "" {
			n++
		}
	}
	return n
}

// NotRunnable says every reproduction run failed to run: the line is broken, not a race.
func (m Minimized) NotRunnable() bool { return len(m.Repro) > 0 && m.ran() == 0 }

// RaceBelow is the reproduction rate under which a find is reported as a race: a line
// that reproduces less than 8 runs in 10 is not a reproduction a reader can rely on.
const RaceBelow = 0.8

// Race says the printed line reproduced in fewer than RaceBelow of its runs (false when
// the rate was not measured).
// Runs that could not run are not counted: a line that never ran is not a race (issue 48:
// two lines the nemesis refused were printed as "a race: 0/5").
func (m Minimized) Race() bool {
	ran := m.ran()
	return ran > 0 && float64(m.Reproduced) < RaceBelow*float64(ran)
}

// Minimize shrinks the invalid run in runDir (faults, phases, node count and the trigger
// chain) and re-runs the resulting one-line `splitbrain run` Repro times. The reproduction
// runs the printed line itself (its --nemesis spec planned anew with the same seed), not
// the recorded plan, so its rate is the rate a reader of the line will see.
func Minimize(ctx context.Context, runDir string, opt MinimizeOptions) (Minimized, error) {
	var m Minimized
	rec, err := shrink.Load(runDir)
	if err != nil {
		return m, err
	}
	if rec.Verdict != harness.VerdictInvalid {
		return m, fmt.Errorf("%s is %s: %w", rec.Dir, rec.Verdict, shrink.ErrNotFailing)
	}
	start, err := rec.CaseOf()
	if err != nil {
		return m, err
	}
	limits, err := rec.Limits()
	if err != nil {
		return m, err
	}
	runner := shrink.HarnessRunner{Base: rec.Config, Want: rec.Want(), Configure: opt.Configure}
	m.Shrink = shrink.Result{Start: start, Minimal: start}
	if opt.ShrinkBudget > 0 {
		tries := opt.ShrinkTries
		if tries <= 0 {
			tries = 2
		}
		m.Shrink, err = shrink.Shrink(ctx, runner, start, shrink.Options{Tries: tries, Budget: opt.ShrinkBudget, Limits: limits,
			Suspects: rec.Suspects(), Trying: opt.Trying, Step: opt.Step})
		if err != nil {
			return m, err
		}
		m.Shrunk = true
	}
	m.RunLine, m.Exact = shrink.RunLine(rec.Config, m.Shrink.Minimal)
	spec, _ := shrink.Spec(m.Shrink.Minimal.Plan)
	for i := 1; i <= opt.Repro && ctx.Err() == nil; i++ {
		cfg := shrink.ForCase(rec.Config, m.Shrink.Minimal)
		cfg.Plan, cfg.Nemesis, cfg.ReplayOf = nil, spec, ""
		if opt.Configure != nil {
			opt.Configure(&cfg)
		}
		o := runOutcome(ctx, cfg, rec.Want())
		m.Repro = append(m.Repro, o)
		if o.Failed {
			m.Reproduced++
		}
		if opt.Replayed != nil {
			opt.Replayed(i, o)
		}
	}
	if m.Shrunk && m.Shrink.Kept > 0 {
		m.Cause = causeOf(m.Shrink.LastFailure.RunDir)
	}
	for _, o := range m.Repro {
		if m.Cause == nil && o.Failed {
			m.Cause = causeOf(o.RunDir)
		}
	}
	return m, nil
}

// runOutcome runs cfg once; it failed when it is invalid with one of want's codes.
func runOutcome(ctx context.Context, cfg harness.Config, want []string) shrink.Outcome {
	t0 := time.Now()
	out, err := harness.Run(ctx, cfg)
	o := shrink.Outcome{Elapsed: time.Since(t0), Verdict: harness.VerdictUnknown}
	if out != nil {
		o.RunDir = out.RunDir
	}
	if err == nil {
		o.Verdict, o.Codes, err = shrink.ReadVerdict(o.RunDir)
	}
	if err != nil {
		o.Err = err.Error()
		return o
	}
	o.Failed = shrink.FailsAs(o.RunDir, o.Verdict, want)
	return o
}
