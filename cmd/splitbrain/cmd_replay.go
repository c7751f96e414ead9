package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/progress"
	"github.com/splitbrain-chaos/splitbrain/shrink"
)

func init() {
	register(command{name: "replay", summary: "re-run a recorded run (same config, seed and fault plan) N times; say how often it reproduced", run: runReplay})
}

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("replay", stderr)
	times := fs.Int("times", 1, "how many times to run it")
	out := fs.String("out", "", "root of the replays' run directories (default: the original's root)")
	quiet := fs.Bool("quiet", false, "no progress lines; only each run's summary and the tally")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: splitbrain replay RUN_DIR [--times N]

Runs the recorded run again with its config.json: the same store, recipe or candidate,
timings, resource mode, seed and concrete fault plan. Each replay is a normal run
directory under <root>/<test>-replay/ whose config.json names the original (replay_of).
Prints how many replays reproduced the original verdict and reason codes; real systems
are not deterministic, so this is a rate. Exit code: 0 if every replay reproduced,
1 if some did not, 255 on a harness error.

`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, runDirFirst(args), true); err != nil {
		return exitUsage, err
	}
	if fs.NArg() != 1 {
		return exitUsage, usagef("give one run directory, e.g. splitbrain replay store/redis-redis-setnx-pause-leader/20260101T000000Z")
	}
	if *times < 1 {
		return exitUsage, usagef("--times %d: want at least 1", *times)
	}
	rec, err := shrink.Load(fs.Arg(0))
	if err != nil {
		return exitUsage, usageError{err.Error()}
	}
	mode := progress.ProgressAuto
	if *quiet {
		mode = progress.ProgressQuiet
	}
	name := replayTestName(rec.TestName(), "-replay")
	configure := func(i int, c *harness.Config) {
		c.TestName, c.Progress, c.ProgressMode = name, stdout, harness.ProgressMode(mode)
		if *out != "" {
			c.StoreRoot = *out
		}
		c.Args = []string{"splitbrain", "replay", rec.Dir}
	}
	probe := rec.Config
	configure(0, &probe)
	if err := harness.CheckConfig(&probe); err != nil {
		return exitUsage, fmt.Errorf("%s: the recorded configuration does not run here: %w", rec.Dir, err)
	}
	fmt.Fprint(stdout, progress.Printable(fmt.Sprintf("splitbrain replay: %s (%s), %d time(s), seed %d, %d planned fault(s)\n",
		rec.Dir, shrink.Label(rec.Verdict, rec.Codes), *times, rec.Config.Seed, plannedFaults(rec))))
	t0 := time.Now()
	outs, err := shrink.Replay(ctx, rec, *times, configure, func(i int, o shrink.Outcome, err error) {
		if o.RunDir != "" {
			publishRun(o.RunDir, io.Discard, stderr)
		}
		status := "reproduced"
		if !o.Failed {
			status = "differs"
		}
		if err != nil {
			status = "error: " + err.Error() // may carry the candidates' log tails
		}
		fmt.Fprint(stdout, progress.Printable(fmt.Sprintf("replay %d/%d: %s — %s (%v) %s\n", i, *times, shrink.Label(o.Verdict, o.Codes), status,
			o.Elapsed.Round(time.Second), o.RunDir)))
	})
	if len(outs) > 0 {
		fmt.Fprint(stdout, progress.Printable(fmt.Sprintf("reproduced: %s, in %v\n", shrink.ReplaySummary(rec, outs), time.Since(t0).Round(time.Second))))
		fmt.Fprint(stdout, progress.Printable(fmt.Sprintf("index:  %s\n", filepath.Join(filepath.Dir(filepath.Dir(outs[0].RunDir)), "index.html"))))
	}
	if err != nil {
		return exitHarness, err
	}
	// Every try a harness error: nothing was replayed, which is no verdict (255, not 1).
	if !slices.ContainsFunc(outs, func(o shrink.Outcome) bool { return o.Err == "" }) {
		return exitHarness, fmt.Errorf("no replay could run (last error: %s)", outs[len(outs)-1].Err)
	}
	for _, o := range outs {
		if !o.Failed {
			return exitInvalid, nil
		}
	}
	return exitValid, nil
}

func plannedFaults(rec *shrink.Recorded) int {
	if rec.Config.Plan == nil {
		return 0
	}
	return len(rec.Config.Plan.Faults)
}

// replayTestName is the original test name with a suffix, kept a valid directory name.
func replayTestName(test, suffix string) string {
	if len(test)+len(suffix) > 100 {
		test = test[:100-len(suffix)]
	}
	return test + suffix
}

// runDirFirst moves a leading RUN_DIR after the flags, so both "replay DIR --times 3" and
// "replay --times 3 DIR" parse (the flag package stops at the first argument).
func runDirFirst(args []string) []string {
	if len(args) > 1 && !strings.HasPrefix(args[0], "-") {
		return append(slices.Clone(args[1:]), args[0])
	}
	return args
}
