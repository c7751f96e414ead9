package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/faultkinds"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/progress"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/reports"
	"github.com/splitbrain-chaos/splitbrain/workloads"
)

func init() {
	register(command{name: "run", summary: "run one chaos test: store, candidates, faults, verdict", run: runRun})
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("run", stderr)
	rf := addRunFlags(fs, true)
	c := &rf.c
	quiet := fs.Bool("quiet", false, "no progress lines; only the summary at the end")
	asJSON := fs.Bool("json", false, "progress and summary as JSON objects, one per line (for tools)")
	progressPeriod := fs.Duration("progress", harness.DefaultProgressPeriod, "period of the plain progress lines (a terminal gets one live line)")
	// Every problem of the command line at once: flags, then the configuration.
	problems := parseFlagsAll(fs, args)
	if len(problems) == 1 && problems[0] == flag.ErrHelp.Error() {
		fs.Usage()
		return exitUsage, flag.ErrHelp
	}
	problems = append(problems, rf.finish()...)
	mode, err := progress.ParseProgressMode(*quiet, *asJSON)
	if err != nil {
		problems = append(problems, err.Error())
	}
	c.ProgressPeriod, c.ProgressMode, c.Progress = *progressPeriod, harness.ProgressMode(mode), stdout
	c.Args = append([]string{"splitbrain", "run"}, args...)
	// Checked once: the run starts from what Prepare validated, resolved and planned.
	prep, err := harness.Prepare(*c)
	if err != nil {
		problems = append(problems, strings.Split(err.Error(), "\n")...)
	}
	if len(problems) > 0 {
		return exitUsage, usageError{fmt.Sprintf("%d problem(s):\n  %s", len(problems), strings.Join(problems, "\n  "))}
	}
	cfg := prep.Config()
	if !*quiet && !*asJSON {
		fmt.Fprintf(stdout, "splitbrain run: %s on %s, %d candidates, %v faults (%s), seed %d\n",
			candidateDesc(&cfg), cfg.Store, cfg.Nodes, cfg.FaultTime, cfg.Nemesis, cfg.Seed)
	}
	out, err := prep.Run(ctx)
	return runExit(ctx, out, err, *asJSON, stdout, stderr)
}

// runFlags are the flags that describe one run. run and explore share them; explore draws
// --nemesis and --seed itself.
type runFlags struct {
	c                          harness.Config
	profile, require, packages *string
}

func addRunFlags(fs *flag.FlagSet, withNemesis bool) *runFlags {
	r := &runFlags{}
	fs.StringVar(&r.c.Store, "store", "", storeFlagHelp()+" (required)")
	fs.IntVar(&r.c.StoreNodes, "store-nodes", 0, storeNodesFlagHelp())
	fs.StringVar(&r.c.Recipe, "recipe", "", "election recipe: "+strings.Join(harness.RecipeNames(), ", "))
	fs.IntVar(&r.c.Nodes, "nodes", harness.DefaultNodes, "number of candidates c1..cN")
	fs.DurationVar(&r.c.FaultTime, "time", 0, "length of the faults phase, e.g. 30s (required); with --until or --cycles its timeout (a run that reaches it first is unknown)")
	fs.StringVar(&r.c.Until, "until", "", "end the faults phase on events, not on --time: once every planned fault (every triggered fault's count=) ran and healed and writes=K (default 3) were accepted after the last heal; also elections=E, handoffs=N (e.g. --until writes=3,elections=20), renewed=N (leaders granted anew after the last heal: a token above every earlier one); settle=D holds it until D passed since the last fault started or ended; stall=D ends it sooner, unknown, once the faults that ran healed, a leader is back and no fault started or ended for D (the triggers left wait on events that did not come); warmup and recovery then end on a leader's accepted writes")
	fs.DurationVar(&r.c.Warmup, "warmup", harness.DefaultWarmup, "no-fault phase before the faults")
	fs.DurationVar(&r.c.Recovery, "recovery", harness.DefaultRecovery, "no-fault phase after the final heal")
	fs.DurationVar(&r.c.TTL, "ttl", harness.DefaultTTL, "lease/session TTL handed to the candidates")
	fs.DurationVar(&r.c.WriteInterval, "write-interval", harness.DefaultWriteInterval, "leader write interval")
	fs.StringVar(&r.c.Workload, "workload", harness.DefaultWorkload, "workload: "+strings.Join(workloads.Names(), ", "))
	fs.DurationVar(&r.c.HandoffEvery, "handoff-every", 0, fmt.Sprintf("handoff workload: period between SIGTERMs of the leader (0 = no time table: each leader gets SIGTERM on accepted write %d of its tenure)", workloads.HandoffWrites))
	fs.DurationVar(&r.c.HandoffPause, "handoff-pause", 0, "handoff workload: how long the resigned leader stays down (0 = 1s)")
	fs.StringVar(&r.c.ResourceMode, "resource", "", "resource mode: fenced (rejects stale tokens) or unfenced (accepts all, records staleness); default "+harness.DefaultResourceMode+", unfenced for a library recipe that gives no token (docs/libraries.md)")
	fs.StringVar(&r.c.CandidateCmd, "candidate-cmd", "", "host executable that speaks the candidate contract (docs/candidates.md), or a directory whose executable 'candidate' does (mounted whole: sources, jars, node_modules), instead of --recipe")
	fs.Func("candidate-arg", "an argument for the --candidate-cmd or --candidate-image program (repeat for more): picks a variant per run", func(v string) error {
		r.c.CandidateArgs = append(r.c.CandidateArgs, v)
		return nil
	})
	fs.Func("candidate-env", "NAME=VALUE added to the candidates' environment (repeat for more; not SPLITBRAIN_*)", func(v string) error {
		r.c.CandidateEnv = append(r.c.CandidateEnv, v)
		return nil
	})
	fs.StringVar(&r.c.CandidateImage, "candidate-image", "", "image whose entrypoint speaks the candidate contract, instead of --recipe")
	r.packages = fs.String("candidate-packages", "", "with --candidate-cmd: comma-separated Debian packages the script needs (e.g. python3,python3-redis); it runs in the base image plus these, built once and cached")
	fs.DurationVar(&r.c.RenewInterval, "renew-interval", 0, "passed as SPLITBRAIN_RENEW_INTERVAL: a lease holder's renew period, < --ttl (0 = the candidate's default)")
	fs.DurationVar(&r.c.RetryInterval, "retry-interval", 0, "passed as SPLITBRAIN_RETRY_INTERVAL: a waiting candidate's poll period (0 = the candidate's default); also part of the expected failover bound")
	fs.Func("leader-work", "passed as SPLITBRAIN_LEADER_WORK: a leader's gap between its lease check and its write, e.g. 0s (default: not set, the write interval for Go recipes)", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a Go duration such as 50ms or 0s", v)
		}
		r.c.LeaderWork, r.c.LeaderWorkSet = d, true
		return nil
	})
	fs.DurationVar(&r.c.FailoverBound, "failover-bound", 0, "crash-failover bound the candidate promises, judged by the latency checker (0 = the recipe's; external candidates: TTL + retry + 1s)")
	fs.StringVar(&r.c.StoreRoot, "out", "", "root of run directories (default $"+harness.EnvStoreDir+" or ./store)")
	fs.StringVar(&r.c.TestName, "name", "", "test name, the directory under --out (default <store>-<recipe>-<nemesis>)")
	r.profile = fs.String("profile", "", "image profile: local or official (default $"+images.EnvProfile+" or local)")
	r.require = fs.String("require", "", "extra requirements, comma-separated: exclusive (no belief overlap), liveness")
	if withNemesis {
		fs.Int64Var(&r.c.Seed, "seed", 0, "seed of the fault plan (0 = from the clock; recorded in config.json)")
		fs.StringVar(&r.c.Nemesis, "nemesis", "none", "fault spec or profile (splitbrain nemesis list), e.g. pause-leader or pause:target=leader,every=10s,for=6s; fault kinds: "+strings.Join(faultkinds.Names(), ", "))
		fs.IntVar(&r.c.Cycles, "cycles", 0, "run the --nemesis profile's event-paced form: N fault cycles, each started on a leader's 3rd write after the last heal (splitbrain nemesis list shows the forms); implies --until")
	}
	return r
}

// storeFlagHelp lists every store kind and none with the recipes that run without a store.
func storeFlagHelp() string {
	return "store: " + strings.Join(stores.Kinds(), ", ") + ", or " + storekinds.None +
		" (candidates elect among themselves: " + strings.Join(candidates.Registry.NamesFor(storekinds.None), ", ") + ")"
}

// storeNodesFlagHelp gives every store kind's default node count.
func storeNodesFlagHelp() string {
	return "store cluster size (0 = the store's default: " + storekinds.DefaultNodesText() + ")"
}

// finish fills the configuration from the parsed flags and returns what is wrong with them.
func (r *runFlags) finish() []string {
	var problems []string
	r.c.Profile = *r.profile
	if *r.packages != "" {
		pk, err := images.ParsePackages(*r.packages)
		if err != nil {
			problems = append(problems, fmt.Sprintf("--candidate-packages: %v", err))
		}
		r.c.CandidatePackages = pk
	}
	if *r.require != "" {
		for _, req := range strings.Split(*r.require, ",") {
			if req = strings.TrimSpace(req); req != "" {
				r.c.Require = append(r.c.Require, req)
			}
		}
	}
	return problems
}

// runExit publishes the run's report and maps its outcome to the exit code: the verdict's
// (0 valid, 1 invalid, 2 unknown), except that a harness failure gives 255 unless the
// history recorded up to it already proves a violation (1: a proof stays a proof).
func runExit(ctx context.Context, out *harness.Outcome, err error, asJSON bool, stdout, stderr io.Writer) (int, error) {
	if out != nil && out.RunDir != "" && !asJSON {
		publishRun(out.RunDir, stdout, stderr)
	} else if out != nil && out.RunDir != "" {
		publishRun(out.RunDir, io.Discard, stderr)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			err = fmt.Errorf("interrupted; healed and torn down (%w)", err)
		}
		if out != nil && out.Verdict == harness.VerdictInvalid {
			fmt.Fprintf(stderr, "splitbrain run: %v\n", err)
			fmt.Fprintln(stderr, "splitbrain run: the history recorded before the failure proves a violation: verdict invalid")
			return exitInvalid, nil
		}
		return exitHarness, err
	}
	switch out.Verdict {
	case harness.VerdictValid:
		return exitValid, nil
	case harness.VerdictInvalid:
		return exitInvalid, nil
	}
	return exitUnknown, nil
}

func candidateDesc(c *harness.Config) string {
	switch {
	case c.CandidateCmd != "":
		return "candidate command " + c.CandidateCmd
	case c.CandidateImage != "":
		return "candidate image " + c.CandidateImage
	}
	return "recipe " + c.Recipe
}

// publishRun renders the run's report and refreshes the store index. A run that never got
// to checking has no results.json and no report; its history and logs stay.
func publishRun(runDir string, stdout, stderr io.Writer) {
	if _, err := os.Stat(filepath.Join(runDir, harness.ResultsFile)); err != nil {
		return
	}
	if err := reports.RenderRun(runDir); err != nil {
		fmt.Fprintf(stderr, "splitbrain: report of %s: %v\n", runDir, err)
		return
	}
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(runDir, "report.html"))
	// The store root is two levels up: <root>/<test-name>/<timestamp>.
	root := filepath.Dir(filepath.Dir(runDir))
	if err := reports.RenderIndex(root); err != nil {
		fmt.Fprintf(stderr, "splitbrain: index of %s: %v\n", root, err)
		return
	}
	fmt.Fprintf(stdout, "index:  %s\n", filepath.Join(root, "index.html"))
}
