package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/checkers/lint"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/progress"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// runCandidateCheck is `splitbrain candidate check`: a short fault-free run of the user's
// candidate with the handoff workload, linted against the contract.
func runCandidateCheck(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("candidate check", stderr)
	var c harness.Config
	fs.StringVar(&c.Store, "store", "", "store the candidate runs on: "+strings.Join(append(stores.Kinds(), storekinds.None), ", ")+
		" (none: no store, the candidates elect among themselves; required)")
	fs.StringVar(&c.CandidateCmd, "candidate-cmd", "", "host executable that speaks the candidate contract")
	packages := fs.String("candidate-packages", "", "with --candidate-cmd: comma-separated Debian packages the script needs, e.g. python3,python3-redis")
	fs.StringVar(&c.CandidateImage, "candidate-image", "", "image whose entrypoint speaks the candidate contract")
	fs.StringVar(&c.Recipe, "recipe", "", "a Go recipe instead (to compare with a known-good candidate)")
	fs.IntVar(&c.Nodes, "nodes", 3, "number of candidates")
	fs.DurationVar(&c.FaultTime, "time", 60*time.Second, "timeout of the check phase, which ends on events: after 3 handoffs (each leader gets SIGTERM on its 5th accepted write), or with --cut-leader once the cut healed and a leader wrote 3 times; a check that runs out of it proves nothing (exit 2)")
	fs.DurationVar(&c.TTL, "ttl", harness.DefaultTTL, "lease/session TTL handed to the candidates")
	fs.DurationVar(&c.WriteInterval, "write-interval", harness.DefaultWriteInterval, "leader write interval")
	fs.StringVar(&c.StoreRoot, "out", "", "root of the run directory (default a new directory under the system temp dir)")
	cut := fs.Bool("cut-leader", false, "also cut the leader off from the store (from its peers with --store none) once for 3×TTL, with the steady workload instead of handoffs and an unfenced resource, and report a leader that believes on for more than TTL + 1s: client timeouts longer than the TTL")
	profile := fs.String("profile", "", "image profile: local or official (default $"+images.EnvProfile+" or local)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: splitbrain candidate check --store S (--candidate-cmd FILE [--candidate-packages L] | --candidate-image IMG) [--time 60s] [--cut-leader]\n\n"+
			"Runs the candidate against a real store without faults until three handoffs happened (each\n"+
			"leader gets SIGTERM on its 5th accepted write) and reports where it breaks the contract of\n"+
			"docs/candidates.md, each problem with its rule and a fix. Exit 0: no problem found; 1:\n"+
			"problems; 2: no problem found but the run proved nothing (it ran out of --time first);\n"+
			"64: bad flags; 255: the run itself failed.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	if c.CandidateCmd == "" && c.CandidateImage == "" && c.Recipe == "" {
		return exitUsage, usagef("no candidate: give --candidate-cmd FILE or --candidate-image IMG")
	}
	if *packages != "" {
		pk, err := images.ParsePackages(*packages)
		if err != nil {
			return exitUsage, usagef("--candidate-packages: %v", err)
		}
		c.CandidatePackages = pk
	}
	if c.StoreRoot == "" {
		dir, err := os.MkdirTemp("", "splitbrain-candidate-check-")
		if err != nil {
			return exitHarness, err
		}
		c.StoreRoot = dir
	}
	c.Profile = *profile
	// Phases end on events, so a loaded machine makes the check slower, never different.
	c.Workload, c.Nemesis, c.Warmup, c.Recovery = "handoff", "none", 5*time.Second, 3*time.Second
	c.Until = "handoffs=3"
	schedule := fmt.Sprintf("3 handoffs (SIGTERM to each leader on its 5th accepted write; timeout %v), no faults", c.FaultTime)
	if *cut {
		// One cut, no handoffs: a SIGTERM to the cut leader would end what is watched, and so
		// would the fence (its first write after the successor's is refused): unfenced, only
		// the candidate's own loss detection ends its belief. The cut starts on a leader's 3rd
		// write, not at a random time, and the phase ends once it healed and a leader wrote.
		c.Workload, c.Nemesis = "steady", "partition:shape=leader-from-store,mode=drop,on=write:3,for=3xTTL,count=1"
		c.ResourceMode = "unfenced"
		if c.Store == storekinds.None {
			c.Nemesis = "partition:shape=isolate,mode=drop,on=write:3,for=3xTTL,count=1"
		}
		c.Until = "faults"
		schedule = fmt.Sprintf("with the leader cut off once for %v on its 3rd write (timeout %v), unfenced resource", 3*c.TTL, c.FaultTime)
	}
	c.TestName = "candidate-check"
	c.ProgressMode, c.Progress = harness.ProgressQuiet, stdout // the run's summary, then the problems
	c.Args = append([]string{"splitbrain", "candidate", "check"}, args...)
	if err := harness.CheckConfig(&c); err != nil {
		return exitUsage, usageError{err.Error()}
	}
	fmt.Fprintf(stdout, "candidate check: %s on %s, %d candidates, %s\n", candidateDesc(&c), c.Store, c.Nodes, schedule)
	out, runErr := harness.Run(ctx, c)
	if out == nil || out.RunDir == "" {
		return exitHarness, fmt.Errorf("the check run did not start: %w", runErr)
	}
	evs, _, err := history.ReadFile(filepath.Join(out.RunDir, harness.HistoryFile))
	if err != nil {
		return exitHarness, err
	}
	res, _ := checkers.ReadResults(filepath.Join(out.RunDir, checkers.ResultsFile))
	problems := lint.Check(evs, res, lint.Options{Store: c.Store, Logs: candidateLogs(out.RunDir, c.Nodes),
		// A handoff leaves the lock free at once: a waiter that polls or watches within the
		// TTL takes it well inside two TTLs.
		TakeoverBound: 2*c.TTL + time.Second, CutBound: c.TTL + time.Second})
	// The problems quote the candidate's own lines: nothing in them may act on the terminal.
	fmt.Fprintf(stdout, "\n%s", problemsText(problems))
	fmt.Fprintf(stdout, "each candidate's own output: %s\n", filepath.Join(out.RunDir, "logs", "c1.log ..."))
	if runErr != nil {
		if startupProblem(problems) {
			// The run stopped because the candidates could not start; the problems say why.
			fmt.Fprintf(stdout, "the check run stopped early: %s\n", progress.Printable(firstLine(runErr.Error())))
			return exitInvalid, nil
		}
		return exitHarness, runErr
	}
	if len(problems) > 0 || out.Verdict == harness.VerdictInvalid {
		return exitInvalid, nil
	}
	if out.Verdict != harness.VerdictValid {
		// No problem seen, but the run proved nothing (it timed out before its events, or
		// its history could not be judged): never a pass.
		fmt.Fprintf(stdout, "no problem found, but the check run's verdict is %s, so it proves nothing: see %s\n", out.Verdict, out.RunDir)
		return exitUnknown, nil
	}
	return exitValid, nil
}

// problemsText is the lint report for a terminal: it quotes the candidate's own lines, so
// control characters in them are escaped.
func problemsText(problems []lint.Problem) string {
	return progress.Printable(lint.Format(problems))
}

// candidateLogs reads each candidate's log (logs/<node>.log), at most its last 4 MiB: the
// linter looks in it for the known store-connection mistakes.
func candidateLogs(runDir string, nodes int) map[string]string {
	const limit = 4 << 20
	out := map[string]string{}
	for i := 1; i <= nodes; i++ {
		node := fmt.Sprintf("c%d", i)
		f, err := os.Open(filepath.Join(runDir, "logs", node+".log"))
		if err != nil {
			continue
		}
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if fi.Size() > limit {
				f.Seek(fi.Size()-limit, io.SeekStart)
			}
			b, _ := io.ReadAll(io.LimitReader(f, limit))
			out[node] = string(b)
		}
		f.Close()
	}
	return out
}

// startupProblem: the linter found why the candidates could not start or connect.
func startupProblem(ps []lint.Problem) bool {
	for _, p := range ps {
		if p.Rule == "R15" || p.Rule == "R12" {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
