package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/history/runfile"
	"github.com/splitbrain-chaos/splitbrain/internal/progress"
	"github.com/splitbrain-chaos/splitbrain/shrink"
)

func init() {
	register(command{name: "shrink", summary: "shrink the fault plan of an invalid run to a smaller one that still fails", run: runShrink})
}

// Files the shrink writes into the run directory it shrinks.
const (
	shrinkLogFile    = "shrink-log.jsonl"
	shrinkResultFile = "shrink-result.json"
)

func runShrink(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	// Tries run quietly, so everything printed here is lines, and error texts in them may
	// quote the candidates' output: escape control characters.
	stdout = progress.PrintableWriter{W: stdout}
	fs := newFlags("shrink", stderr)
	tries := fs.Int("tries", 3, "tries per smaller plan; it is kept if at least one of them fails")
	budget := fs.Duration("budget", 30*time.Minute, "wall-time budget of the whole shrink")
	out := fs.String("out", "", "root of the tries' run directories (default: the original's root)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: splitbrain shrink RUN_DIR [--tries K] [--budget D]

Delta debugging over the concrete fault plan of an invalid run: drop faults, lower the
node count, shorten the phases, then the faults; a smaller plan is kept only if it is
invalid again, with one of the original reason codes, in at least one of K tries. Stops
at a local minimum (no smaller move fails) or when the next try would not fit in the
budget. Every try is a normal run under <root>/<test>-shrink/. Writes RUN_DIR/`+shrinkLogFile+`
(one line per step: move, size, tries, outcome) and RUN_DIR/`+shrinkResultFile+`, and prints
the minimal plan as a --nemesis spec and a replay command.

`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, runDirFirst(args), true); err != nil {
		return exitUsage, err
	}
	if fs.NArg() != 1 {
		return exitUsage, usagef("give one run directory of an invalid run")
	}
	if *tries < 1 || *budget <= 0 {
		return exitUsage, usagef("--tries must be >= 1 and --budget > 0 (e.g. --tries 3 --budget 30m)")
	}
	rec, err := shrink.Load(fs.Arg(0))
	if err != nil {
		return exitUsage, usageError{err.Error()}
	}
	if rec.Verdict != harness.VerdictInvalid {
		return exitUsage, usagef("%s is %s: %v", rec.Dir, rec.Verdict, shrink.ErrNotFailing)
	}
	start, err := rec.CaseOf()
	if err != nil {
		return exitUsage, usageError{err.Error()}
	}
	limits, err := rec.Limits()
	if err != nil {
		return exitUsage, usageError{err.Error()}
	}
	name := replayTestName(rec.TestName(), "-shrink")
	runner := shrink.HarnessRunner{Base: rec.Config, Want: rec.Want(), Configure: func(c *harness.Config) {
		c.TestName, c.Progress, c.ProgressMode = name, io.Discard, harness.ProgressQuiet
		if *out != "" {
			c.StoreRoot = *out
		}
		c.Args = []string{"splitbrain", "shrink", rec.Dir}
	}}
	probe := shrink.ForCase(rec.Config, start)
	runner.Configure(&probe)
	if err := harness.CheckConfig(&probe); err != nil {
		return exitUsage, fmt.Errorf("%s: the recorded configuration does not run here: %w", rec.Dir, err)
	}
	// Both files go into a run directory that may be someone else's: a FIFO there would
	// block the open, a symlink would send the write elsewhere.
	for _, name := range []string{shrinkLogFile, shrinkResultFile} {
		if err := runfile.CheckReplaceable(filepath.Join(rec.Dir, name)); err != nil {
			return exitUsage, usageError{err.Error()}
		}
	}
	logf, err := os.Create(filepath.Join(rec.Dir, shrinkLogFile))
	if err != nil {
		return exitHarness, err
	}
	defer logf.Close()
	enc := json.NewEncoder(logf)
	fmt.Fprintf(stdout, "splitbrain shrink: %s (%s)\nstart: %s; %d tries per step, budget %v\n",
		rec.Dir, shrink.Label(rec.Verdict, rec.Codes), start.Size(), *tries, *budget)
	t0 := time.Now()
	res, err := shrink.Shrink(ctx, runner, start, shrink.Options{
		Tries: *tries, Budget: *budget, Limits: limits, Suspects: rec.Suspects(),
		Trying: func(step int, move string, size shrink.Size, try int) {
			fmt.Fprintf(stdout, "step %d try %d/%d: %s → %s (elapsed %v of %v)\n", step, try, *tries, move, size,
				time.Since(t0).Round(time.Second), *budget)
		},
		Step: func(st shrink.Step) {
			enc.Encode(st)
			for _, o := range st.Tries {
				if o.RunDir != "" {
					publishRun(o.RunDir, io.Discard, stderr)
				}
			}
			verdict := "no failure: discarded"
			if st.Kept {
				verdict = "FAILED: kept"
			}
			if st.Error != "" {
				verdict += " (error: " + st.Error + ")"
			}
			fmt.Fprintf(stdout, "step %d: %s, %d tries → %s; current %s\n", st.N, st.Move, len(st.Tries), verdict, st.Current)
		},
	})
	if err != nil {
		return exitHarness, err
	}
	spec, exact := shrink.Spec(res.Minimal.Plan)
	result := map[string]any{
		"original": rec.Dir, "stopped": res.Stopped, "steps": res.Steps, "tries": res.Tries, "kept": res.Kept,
		"elapsed": res.Elapsed.String(), "start_size": res.Start.Size(), "minimal_size": res.Minimal.Size(),
		"minimal": res.Minimal, "nemesis": spec, "spec_exact": exact,
	}
	replay := "splitbrain replay " + shellQuoteArg(rec.Dir)
	if res.LastFailure.RunDir != "" {
		replay = "splitbrain replay " + shellQuoteArg(res.LastFailure.RunDir)
		result["minimal_run"] = res.LastFailure.RunDir
	}
	result["replay"] = replay
	if b, err := json.MarshalIndent(result, "", "  "); err == nil {
		if err := runfile.WriteFile(filepath.Join(rec.Dir, shrinkResultFile), append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "note: %v\n", err)
		}
	}
	fmt.Fprintf(stdout, "stopped: %s after %d steps, %d tries, %v\n", res.Stopped, res.Steps, res.Tries, res.Elapsed.Round(time.Second))
	fmt.Fprintf(stdout, "size: %s → %s\n", res.Start.Size(), res.Minimal.Size())
	fmt.Fprintf(stdout, "minimal plan (--nemesis): %s\n", spec)
	if !exact {
		fmt.Fprintf(stdout, "  (seeded targets: the spec matches the plan with --seed %d; the replay command is exact)\n", rec.Config.Seed)
	}
	runLine, _ := shrink.RunLine(rec.Config, res.Minimal)
	fmt.Fprintf(stdout, "as a run:  %s\n", runLine)
	fmt.Fprintf(stdout, "replay:    %s\n", replay)
	fmt.Fprintf(stdout, "log:       %s\n", filepath.Join(rec.Dir, shrinkLogFile))
	if res.Stopped == shrink.StopCancelled {
		return exitHarness, fmt.Errorf("interrupted; the minimal plan so far is above")
	}
	return exitInvalid, nil
}

// shellQuoteArg single-quotes s unless it is plainly safe.
func shellQuoteArg(s string) string { return shrink.ShellQuote(s) }
