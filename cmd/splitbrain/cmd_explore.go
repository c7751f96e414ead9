package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/explore"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/progress"
	"github.com/splitbrain-chaos/splitbrain/shrink"
)

func init() {
	register(command{name: "explore", summary: "search for a violation: run a recipe again and again with random fault schedules until one is invalid", run: runExplore})
}

func runExplore(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("explore", stderr)
	rf := addRunFlags(fs, false)
	c := &rf.c
	budget := fs.Duration("budget", 10*time.Minute, "stop starting runs after this long (a started run finishes)")
	maxRuns := fs.Int("runs", 0, "stop after this many runs (0: until the budget)")
	faults := fs.String("faults", "", "the vocabulary, comma-separated kinds or forms, e.g. pause,kill or pause:target=leader,partition:shape=halves (default: every kind, target and shape)")
	maxFaults := fs.Int("max-faults", 3, "faults per drawn schedule: 1..N")
	seed := fs.Int64("seed", 0, "seed of the draws (0 = from the clock); the same seed draws the same schedules")
	verbose := fs.Bool("v", false, "print each run's progress lines too")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: splitbrain explore --store S --recipe R [run flags] [--budget 10m] [--faults pause,kill]

Runs the recipe again and again, each time with a fresh seed and a fault schedule composed at
random from the vocabulary (kinds, targets, partition shapes; each fault held 1-4xTTL, once
or repeatedly). Stops at the first invalid run and prints its directory and the commands that
replay and shrink it. Every try is a normal run directory under <out>/<name>/.
Exit code: 1 when a violation was found, 0 when none was and some run proved its schedule
valid, 2 when no run proved anything (all unknown), 255 on a harness error, 64 on bad flags.

`)
		fs.PrintDefaults()
	}
	problems := parseFlagsAll(fs, args)
	if len(problems) == 1 && problems[0] == flag.ErrHelp.Error() {
		fs.Usage()
		return exitUsage, flag.ErrHelp
	}
	problems = append(problems, rf.finish()...)
	if *budget <= 0 && *maxRuns <= 0 {
		problems = append(problems, "--budget and --runs are both unset: give a time budget (e.g. --budget 10m) or a number of runs")
	}
	if *maxRuns < 0 {
		problems = append(problems, fmt.Sprintf("--runs %d: want 0 (no limit) or more", *maxRuns))
	}
	var only []string
	if *faults != "" {
		only = strings.Split(*faults, ",")
	}
	vocab, err := explore.NewVocabulary(only, *maxFaults)
	if err != nil {
		problems = append(problems, "--faults/--max-faults: "+err.Error())
	}
	if d, err := candidates.Registry.Lookup(c.Recipe); err == nil {
		vocab = vocab.WithSteps(d.Describe().Steps)
	}
	if c.TestName == "" {
		c.TestName = exploreTestName(c)
	}
	// The configuration without faults must be runnable; drawn schedules are checked per try.
	probe := *c
	probe.Nemesis = "none"
	if err := harness.CheckConfig(&probe); err != nil {
		problems = append(problems, strings.Split(err.Error(), "\n")...)
	}
	if len(problems) > 0 {
		return exitUsage, usageError{fmt.Sprintf("%d problem(s):\n  %s", len(problems), strings.Join(problems, "\n  "))}
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano()
	}
	mode := progress.ProgressQuiet
	if *verbose {
		mode = progress.ProgressAuto
	}
	limit := fmt.Sprintf("budget %v", *budget)
	if *maxRuns > 0 {
		limit += fmt.Sprintf(", at most %d runs", *maxRuns)
	}
	fmt.Fprintf(stdout, "splitbrain explore: %s on %s, %d candidates, %v faults phase a run, %s, %d fault forms, seed %d\n",
		candidateDesc(c), c.Store, c.Nodes, c.FaultTime, limit, len(vocab.Atoms()), *seed)
	t0 := time.Now()
	res, err := explore.Explore(ctx, explore.Options{
		Base: *c, Budget: *budget, MaxRuns: *maxRuns, Vocabulary: vocab, Seed: *seed,
		Configure: func(i int, cfg *harness.Config) {
			cfg.Progress, cfg.ProgressMode = io.Discard, mode
			if *verbose {
				cfg.Progress = stdout
			}
			cfg.Args = []string{"splitbrain", "explore", "(try " + fmt.Sprint(i) + ")"}
		},
		Started: func(i int, spec string, runSeed int64) {
			fmt.Fprintf(stdout, "try %d (%v elapsed): --nemesis '%s' --seed %d\n", i, time.Since(t0).Round(time.Second), spec, runSeed)
		},
		Each: func(t explore.Try) {
			if t.RunDir != "" {
				publishRun(t.RunDir, io.Discard, stderr)
			}
			label := shrink.Label(t.Verdict, t.Codes)
			if t.Err != nil {
				label = "harness error: " + errorText(t.Err)
			}
			fmt.Fprintf(stdout, "try %d: %s (%v) %s\n", t.N, label, t.Elapsed.Round(time.Second), t.RunDir)
		},
	})
	if err != nil {
		return exitUsage, usageError{err.Error()}
	}
	printExploreSummary(stdout, res, time.Since(t0))
	switch {
	case res.Found != nil:
		return exitInvalid, nil
	case ctx.Err() != nil:
		return exitHarness, fmt.Errorf("interrupted after %d run(s); each was healed and torn down", len(res.Tries))
	case res.Tally()[harness.VerdictValid] == 0:
		return exitUnknown, nil
	}
	return exitValid, nil
}

func printExploreSummary(w io.Writer, res explore.Result, elapsed time.Duration) {
	tally := res.Tally()
	var parts []string
	for _, k := range []string{harness.VerdictInvalid, harness.VerdictValid, harness.VerdictUnknown, "error"} {
		if tally[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", tally[k], k))
		}
	}
	kinds := map[string]int{}
	for _, t := range res.Tries {
		for _, item := range strings.Split(t.Spec, "; ") {
			k, _, _ := strings.Cut(item, ":")
			kinds[k]++
		}
	}
	var kindParts []string
	for k, n := range kinds {
		kindParts = append(kindParts, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(kindParts)
	fmt.Fprintf(w, "explored: %d run(s) in %v (%s); faults tried: %s; stopped: %s\n",
		len(res.Tries), elapsed.Round(time.Second), orText(strings.Join(parts, ", "), "none"),
		orText(strings.Join(kindParts, ", "), "none"), res.Stop)
	if res.Refused > 0 {
		fmt.Fprintf(w, "drawn but refused by this store/recipe (redrawn, never run): %d\n", res.Refused)
	}
	if f := res.Found; f != nil {
		fmt.Fprintf(w, "VIOLATION in try %d: %s\n  run:     %s\n  report:  %s\n  replay:  splitbrain replay %s --times 5\n  shrink:  splitbrain shrink %s\n",
			f.N, shrink.Label(f.Verdict, f.Codes), f.RunDir, filepath.Join(f.RunDir, "report.html"), f.RunDir, f.RunDir)
		return
	}
	if tally[harness.VerdictValid] == 0 {
		fmt.Fprintln(w, "no run proved anything (none came out valid): the search found nothing, and showed nothing safe")
	}
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// exploreTestName names the directory the tries go under: <store>-<recipe>-explore.
func exploreTestName(c *harness.Config) string {
	who := c.Recipe
	if who == "" {
		who = "candidate"
	}
	return c.Store + "-" + who + "-explore"
}
