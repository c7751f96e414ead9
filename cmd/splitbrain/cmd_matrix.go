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

	"github.com/splitbrain-chaos/splitbrain/suite"
)

func init() {
	register(command{name: "matrix", summary: "run the known-answer matrix (suite/matrix.yaml) and compare every outcome", run: runMatrix})
}

func runMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("matrix", stderr)
	file := fs.String("file", "", "matrix file (default "+suite.DefaultFile+", looked up from the current directory upwards)")
	filter := fs.String("filter", "", "Go regular expression on row names, e.g. '^redis/' or 'pause-leader'")
	parallel := fs.Int("parallel", 1, "rows run at once (each row is a whole cluster: keep it low on small machines)")
	idleExtra := fs.Int("idle-extra", 0, "up to `N` rows beyond --parallel while the machine's cores idle (half a core for 3 s; taken back when they are busy, docs/suite.md)")
	tier := fs.String("tags", suite.TierDefault, "tier: smoke, default or nightly (nightly = every row)")
	store := fs.String("store", "", "store directory for run directories, index and junit.xml (default $SPLITBRAIN_STORE_DIR or ./store)")
	list := fs.Bool("list", false, "list the selected rows and their planned time; run nothing")
	verbose := fs.Bool("v", false, "print each run's progress lines (best with --parallel 1); with --list, each row's faults as run and when its phase ends")
	shardFlag := fs.String("shard", "", "run only share `I/N` of the selected rows, e.g. 2/4 (balanced by planned time; merge the shards' stores with 'splitbrain report --merge')")
	fullBinary := fs.String("full-binary", "", "core build only: build the full binary at `PATH` in the background (nice 19) and run the rows whose store the core does not link with it (make chaos)")
	resultsFile := fs.String("results", "", "write the rows' results as JSON to `FILE` instead of publishing the index and junit.xml (a parent matrix reads it: --full-binary)")
	serve := fs.Bool("serve", false, "run the rows named on stdin, one per line, each as it arrives, with one store pool; write each result as a JSON line to stdout (a parent matrix hands its rows so: --full-binary)")
	fresh := fs.Bool("fresh-stores", false, "start a fresh store cluster for every row (default: reuse a row's cluster, checked and wiped, for the next row of the same store)")
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	if *parallel < 1 {
		return exitUsage, usagef("--parallel %d: want at least 1", *parallel)
	}
	if *idleExtra < 0 {
		return exitUsage, usagef("--idle-extra %d: want 0 (none) or more", *idleExtra)
	}
	path := *file
	if path == "" {
		var err error
		if path, err = findMatrix(); err != nil {
			return exitUsage, usageError{err.Error()}
		}
	}
	m, err := suite.Load(path)
	if err != nil {
		return exitUsage, usageError{err.Error()}
	}
	cases, err := m.Select(*tier, *filter)
	if err != nil {
		return exitUsage, usageError{err.Error()}
	}
	if len(cases) == 0 {
		return exitUsage, usagef("no row of tier %s matches --filter %q (try --list --tags nightly)", *tier, *filter)
	}
	shardNote := ""
	// --shard "" (an unset variable in a CI script) must not mean "the whole matrix".
	shardGiven := false
	fs.Visit(func(f *flag.Flag) { shardGiven = shardGiven || f.Name == "shard" })
	if shardGiven && strings.TrimSpace(*shardFlag) == "" {
		return exitUsage, usagef("--shard is empty: give I/N, e.g. --shard 2/4, or leave --shard out to run every selected row")
	}
	if shardGiven {
		sh, err := suite.ParseShard(*shardFlag)
		if err != nil {
			return exitUsage, usageError{err.Error()}
		}
		all := len(cases)
		cases = sh.Select(cases)
		shardNote = fmt.Sprintf(", shard %s: %d of %d rows", sh, len(cases), all)
		if len(cases) == 0 {
			// More shards than rows: an empty shard is a success with nothing to publish.
			fmt.Fprintf(stdout, "splitbrain matrix: shard %s of tier %s has no rows (%d rows in all)\n", sh, *tier, all)
			return exitValid, nil
		}
	}
	var planned, timeouts time.Duration
	paced := 0
	for _, c := range cases {
		if c.EventEnded() {
			paced++
			timeouts += c.Planned()
		} else {
			planned += c.Planned()
		}
	}
	phases := fmt.Sprintf("%v of planned phases", planned)
	switch {
	case paced == len(cases):
		phases = fmt.Sprintf("every phase ends on events (timeouts %v in all)", timeouts)
	case paced > 0:
		phases = fmt.Sprintf("%d event-ended (timeouts %v in all), %v of planned phases for the other %d", paced, timeouts, planned, len(cases)-paced)
	}
	if *list {
		byPacing := map[string]int{}
		for _, c := range cases {
			fmt.Fprintf(stdout, "%-55s expect %-7s  %v\n", c.Name, c.Row.Expect.Verdict, c.PlanText())
			byPacing[c.Pacing()]++
			if *verbose {
				faults := c.FaultsAsRun()
				if faults == "" {
					faults = "no faults"
				}
				fmt.Fprintf(stdout, "    %s: %s\n    ends %s\n", c.Pacing(), faults, c.EndText())
			}
		}
		var kinds []string
		for _, k := range []string{"triggered", "statistical", "fault-free", "time-tabled", "unparsed"} {
			if byPacing[k] > 0 {
				kinds = append(kinds, fmt.Sprintf("%d %s", byPacing[k], k))
			}
		}
		fmt.Fprintf(stdout, "%d rows%s (%s), %s (plus setup/teardown per row)\n", len(cases), shardNote, strings.Join(kinds, ", "), phases)
		if !*verbose {
			fmt.Fprintln(stdout, "each row's faults as run and when its phase ends: add -v")
		}
		return exitValid, nil
	}
	if *serve {
		opts := suite.Options{StoreRoot: *store, Parallel: *parallel, Progress: stderr, NoReuse: *fresh}
		if err := suite.Serve(ctx, cases, os.Stdin, stdout, opts); err != nil {
			return exitHarness, fmt.Errorf("--serve: %w", err)
		}
		if ctx.Err() != nil {
			return exitHarness, errors.New("interrupted; the runs in progress healed and tore down")
		}
		return exitValid, nil
	}
	fmt.Fprintf(stdout, "splitbrain matrix: %d rows of %s (tier %s%s), %s, %d at a time\n",
		len(cases), path, *tier, shardNote, phases, *parallel)
	opts := suite.Options{StoreRoot: *store, Parallel: *parallel, IdleExtra: *idleExtra, Progress: stdout, NoReuse: *fresh}
	if *verbose {
		opts.RunProgress = stdout
	}
	root := suite.StoreRoot(*store)
	if unlinked := countUnlinked(cases); unlinked > 0 && *fullBinary != "" {
		abs, err := filepath.Abs(*fullBinary)
		if err != nil {
			return exitUsage, usagef("--full-binary %s: %v", *fullBinary, err)
		}
		fmt.Fprintf(stdout, "splitbrain matrix: this core build runs %d of the rows; the other %d run with the full binary %s, building beside them\n",
			len(cases)-unlinked, unlinked, abs)
		full := suite.StartFullBuild(ctx, m.Root(), abs, stdout)
		full.MatrixFile, full.Tier, full.StoreRoot = path, *tier, root
		full.Parallel, full.FreshStore = *parallel, *fresh
		opts.Unlinked = full
	}
	start := time.Now()
	results := suite.RunCases(ctx, cases, opts)
	if full, ok := opts.Unlinked.(*suite.FullBinary); ok {
		st := full.Close()
		fmt.Fprintf(stdout, "matrix: the full binary's store clusters: %d started, %d reuses, %d removed after a failed check or run, %d retired idle\n", st.Launched, st.Reused, st.Discarded, st.Retired)
	}
	if *resultsFile != "" {
		if err := suite.WriteResults(*resultsFile, results); err != nil {
			return exitHarness, fmt.Errorf("--results %s: %w", *resultsFile, err)
		}
		return matrixExit(ctx, stdout, results)
	}
	fmt.Fprintln(stdout)
	suite.WriteTable(stdout, results)
	fmt.Fprintf(stdout, "matrix wall time: %v\n", time.Since(start).Round(time.Second))
	junit, perr := suite.Publish(root, results)
	fmt.Fprintf(stdout, "junit: %s\n", junit)
	if _, err := os.Stat(filepath.Join(root, suite.IndexFile)); err == nil {
		fmt.Fprintf(stdout, "index: %s\n", filepath.Join(root, suite.IndexFile))
	}
	if perr != nil {
		fmt.Fprintf(stderr, "splitbrain matrix: reports: %v\n", perr)
	}
	return matrixExit(ctx, stdout, results)
}

func matrixExit(ctx context.Context, stdout io.Writer, results []suite.Result) (int, error) {
	if ctx.Err() != nil {
		return exitHarness, errors.New("interrupted; the runs in progress healed and tore down")
	}
	if s := suite.Summarize(results); s.Matched != s.Cases {
		fmt.Fprintf(stdout, "FAIL: %d of %d rows differ from the matrix\n", s.Cases-s.Matched, s.Cases)
		return exitInvalid, nil
	}
	fmt.Fprintln(stdout, "PASS: every row as expected")
	return exitValid, nil
}

// countUnlinked is how many cases' stores this build does not link (the core build).
func countUnlinked(cases []suite.Case) int {
	n := 0
	for _, c := range cases {
		if c.Unlinked() {
			n++
		}
	}
	return n
}

// findMatrix looks for suite/matrix.yaml in the current directory and its parents, so the
// command works from anywhere inside the source tree.
func findMatrix() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, filepath.FromSlash(suite.DefaultFile))
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return "", fmt.Errorf("no %s in %s or its parents: run inside the source tree or give --file", suite.DefaultFile, strings.TrimSuffix(dir, "/"))
}
