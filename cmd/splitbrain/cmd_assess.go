package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/assess"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/progress"
)

func init() {
	register(command{name: "assess", summary: "is my election safe? run the fault battery for a recipe or candidate on its store and write a scorecard", run: runAssess})
}

func runAssess(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	// The progress lines quote candidates' output (a harness error carries their log tails)
	// and paths: escape control characters, as explore and shrink do.
	raw := stdout
	stdout = progress.PrintableWriter{W: stdout}
	fs := newFlags("assess", stderr)
	var o assess.Options
	var cmd, checks, packages string
	fs.StringVar(&o.Store, "store", "", storeFlagHelp()+" (required)")
	fs.StringVar(&o.Recipe, "recipe", "", "election recipe to assess: "+strings.Join(harness.RecipeNames(), ", "))
	fs.StringVar(&cmd, "candidate-cmd", "", "host executable that speaks the candidate contract (docs/candidates.md), or a Go main package directory (built static), instead of --recipe")
	fs.StringVar(&packages, "candidate-packages", "", "with --candidate-cmd: comma-separated Debian packages the script needs (e.g. python3,python3-redis)")
	fs.StringVar(&o.CandidateImage, "candidate-image", "", "image whose entrypoint speaks the candidate contract, instead of --recipe")
	fs.DurationVar(&o.Budget, "budget", assess.DefaultBudget, "time the assessment may take; checks that do not fit are listed as not run (run again with the same --out to go on)")
	fs.StringVar(&o.OutDir, "out", "assess-out", "directory of the scorecard (scorecard.html, scorecard.json, junit.xml), the resume state and the runs")
	fs.StringVar(&checks, "checks", "", "comma-separated subset of the battery: "+strings.Join(assess.Names(), ", ")+" (default: every check that applies)")
	fs.Int64Var(&o.Seed, "seed", 1, "seed of every check's fault plan and of the explore draws")
	fs.StringVar(&o.Resource, "resource", "", "the resource the verdict is judged on: fenced (yours rejects stale fencing tokens) or unfenced (it does not: a check unsafe without the fence fails); default fenced, unfenced for a library that gives no token (docs/libraries.md)")
	fs.DurationVar(&o.TTL, "ttl", harness.DefaultTTL, "lease/session TTL handed to the candidates")
	fs.IntVar(&o.ExploreRuns, "explore-runs", 2, "valid tries the bounded explore check wants (1 to 50; it makes at most twice as many)")
	fs.IntVar(&o.Parallel, "parallel", 2, "checks run at once, each on a store cluster of its own (1 to 4; 2 fits the battery of a correct etcd candidate into 10 minutes on a loaded 2-core machine, docs/assess.md)")
	fs.BoolVar(&o.Fence, "fence", false, "the candidate powers nodes off through the run's fence device ($SPLITBRAIN_FENCE_URL, STONITH): run the fence checks (fence-lying, fence-unreachable, fence-slow); a recipe that fences (etcd-stonith) gets them without it")
	var steps string
	fs.StringVar(&steps, "steps", "", "with --candidate-cmd or --candidate-image: comma-separated steps the candidate prints (docs/candidates.md §2), as a recipe declares them; leader-work, printed as the gap between the lease check and the write opens, adds the zombie-window check")
	list := fs.Bool("list", false, "print the battery for this store and candidate, and exit")
	driven := fs.Bool("driven", false, "for splitbraintest: run the checks one by one as commands on stdin ask, without resume state, printing JSON events on stdout (assess/assessproto); with --list, print the plan as one event")
	profile := fs.String("profile", "", "image profile: local or official (default $"+images.EnvProfile+" or local)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: splitbrain assess --store S (--recipe R | --candidate-cmd FILE | --candidate-image IMG) [--budget 10m] [--out DIR]

Runs the battery of checks that the store and the candidate make sense for (docs/assess.md):
fault-free, graceful handoff, leader kill/pause/freeze, the zombie window, the leader cut off
from the store (silent and refused), a store-majority split (stores with a leader), clock bump
and rate, latency, half-open and reset connections, a whole-store outage, a follower cut then
the leader killed, a waiter killed, the fence device unreachable, slow or lying (for a
candidate that fences: a STONITH recipe, or --fence), and a bounded explore. Each check runs
event-paced on an unfenced resource and, where it fails there, again on the fenced one (not
a fence check: the device is its fence, so it is judged unfenced). Progress goes to stdout;
the scorecard lands in --out. An interrupted assessment resumes: the same command with the
same --out skips the checks already done.
Exit code: 0 every check safe, 1 a check unsafe on the judged resource, 2 a check proved
nothing or did not fit the budget, 255 harness error, 64 bad flags.

`)
		fs.PrintDefaults()
	}
	problems := parseFlagsAll(fs, args)
	if len(problems) == 1 && problems[0] == flag.ErrHelp.Error() {
		fs.Usage()
		return exitUsage, flag.ErrHelp
	}
	if cmd != "" {
		o.CandidateCmd = []string{cmd}
	}
	if packages != "" {
		pk, err := images.ParsePackages(packages)
		if err != nil {
			problems = append(problems, fmt.Sprintf("--candidate-packages: %v", err))
		}
		o.CandidatePackages = pk
	}
	for _, st := range strings.Split(steps, ",") {
		if st = strings.TrimSpace(st); st != "" {
			o.Steps = append(o.Steps, st)
		}
	}
	if checks != "" {
		o.Checks = strings.Split(checks, ",")
	}
	if *profile != "" {
		problems = append(problems, fmt.Sprintf("--profile %q: assess runs the local profile's images (set $%s for another)", *profile, images.EnvProfile))
	}
	if o.Budget <= 0 {
		problems = append(problems, fmt.Sprintf("--budget %v: want a positive duration such as 10m", o.Budget))
	}
	o.Args = append([]string{"splitbrain", "assess"}, args...)
	o.Progress = stdout
	plan, skipped, err := assess.PlanWithSkips(o)
	if err != nil {
		problems = append(problems, strings.Split(err.Error(), "\n")...)
	}
	if len(problems) > 0 {
		return exitUsage, usageError{fmt.Sprintf("%d problem(s):\n  %s", len(problems), strings.Join(problems, "\n  "))}
	}
	if *driven {
		return runAssessDriven(ctx, o, plan, *list, assessStdin, raw)
	}
	if *list {
		for _, c := range plan {
			fmt.Fprintf(stdout, "%-24s %s\n%-24s fault: %s\n", c.Name, c.Purpose, "", faultText(c))
		}
		for _, s := range skipped {
			fmt.Fprintf(stdout, "%-24s left out: %s\n", s.Name, s.Why)
		}
		return exitValid, nil
	}
	// What `run` refuses with 64 before anything starts (a 1ns TTL, a FIFO or a Go directory
	// that does not build as --candidate-cmd) is refused here too, not met by every check in
	// turn as a harness error.
	if err := assess.Preflight(o); err != nil {
		return exitUsage, usageError{err.Error()}
	}
	t0 := time.Now()
	sc, err := assess.Run(ctx, o)
	if sc == nil {
		if errors.Is(err, assess.ErrOutDirInUse) {
			return exitUsage, err // --out names a directory another assessment writes into
		}
		return exitHarness, err
	}
	fmt.Fprintf(stdout, "assess: took %v\n", time.Since(t0).Round(time.Second))
	if err != nil {
		return exitHarness, err
	}
	switch sc.Verdict {
	case harness.VerdictValid:
		return exitValid, nil
	case harness.VerdictInvalid:
		return exitInvalid, nil
	}
	return exitUnknown, nil
}

func faultText(c assess.Check) string {
	s := c.Fault
	switch {
	case c.Explore:
		return "drawn per try (explore)"
	case c.Paced:
		s += " (event-paced, one cycle)"
	}
	if c.Workload != "" {
		s += ", workload " + c.Workload
	}
	if c.Until != "" {
		s += ", until " + c.Until
	}
	return s
}
