package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
	"github.com/splitbrain-chaos/splitbrain/reports"
)

func init() {
	register(command{name: "report", summary: "(re)render report.html and junit.xml of a run, or the store's index.html (--index)", run: runReport})
}

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("report", stderr)
	index := fs.Bool("index", false, "regenerate STORE/index.html (all runs + leaderboard) instead of one run's report")
	store := fs.String("store", defaultStoreDir(), "store directory holding <test>/<timestamp>/ runs (with --index; also regenerated after a RUN_DIR report when RUN_DIR lies in it)")
	merge := fs.String("merge", "", "merge the store directories of matrix shards (the arguments) into this new store directory: runs, one index.html, one junit.xml")
	junitOut := fs.String("combine-junit", "", "write one JUnit file combining the junit.xml of every run in STORE to this path (with --index)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: splitbrain report RUN_DIR            render RUN_DIR/report.html and RUN_DIR/junit.xml from results.json")
		fmt.Fprintln(stderr, "       splitbrain report --index [--store DIR] [--combine-junit FILE]   render DIR/index.html")
		fmt.Fprintln(stderr, "       splitbrain report --merge OUT SHARD_STORE...   merge the stores of `matrix --shard` runs into OUT")
		fs.PrintDefaults()
	}
	if slices.ContainsFunc(args, func(a string) bool {
		return a == "--merge" || a == "-merge" || strings.HasPrefix(a, "--merge=") || strings.HasPrefix(a, "-merge=")
	}) {
		if err := fs.Parse(args); err != nil {
			return exitUsage, err
		}
		return mergeShards(*merge, fs.Args(), stdout)
	}
	dir, err := parseRunDirArgs(fs, args)
	if err != nil {
		return exitUsage, err
	}
	switch {
	case *index && dir != "":
		return exitUsage, usagef("give either RUN_DIR or --index, not both")
	case *index:
		if *junitOut != "" {
			// Checked before anything is written: the file is replaced by rename, which
			// would turn --combine-junit /dev/null into a regular file.
			if err := runfile.CheckReplaceable(*junitOut); err != nil {
				return exitUsage, usageError{"--combine-junit " + err.Error()}
			}
		}
		if err := reports.RenderIndex(*store); err != nil {
			return exitHarness, err
		}
		fmt.Fprintf(stdout, "index: %s\n", filepath.Join(*store, reports.IndexFile))
		if *junitOut != "" {
			paths, _ := filepath.Glob(filepath.Join(*store, "*", "*", reports.JUnitFile))
			if len(paths) == 0 {
				return exitHarness, fmt.Errorf("--combine-junit: no %s under %s (render run reports first)", reports.JUnitFile, *store)
			}
			if err := reports.CombineJUnit(paths, *junitOut); err != nil {
				return exitHarness, err
			}
			fmt.Fprintf(stdout, "junit: %s (%d runs)\n", *junitOut, len(paths))
		}
		return exitValid, nil
	case dir == "":
		return exitUsage, usagef("missing RUN_DIR (e.g. store/<test>/latest) or --index")
	}
	if err := requireDir(dir); err != nil {
		return exitUsage, err
	}
	if err := reports.RenderRun(dir); err != nil {
		return exitHarness, err
	}
	fmt.Fprintf(stdout, "report: %s\njunit:  %s\n", filepath.Join(dir, reports.ReportFile), filepath.Join(dir, reports.JUnitFile))
	// RUN_DIR is <store>/<test>/<timestamp>: keep that store's index current too.
	if parent := filepath.Dir(filepath.Dir(filepath.Clean(dir))); parent != "" {
		if _, err := os.Stat(filepath.Join(parent, reports.IndexFile)); err == nil {
			if err := reports.RenderIndex(parent); err != nil {
				fmt.Fprintf(stderr, "note: index not updated: %v\n", err)
			}
		}
	}
	return exitValid, nil
}

// mergeShards merges shard stores; refusals (mixed versions, a run in two shards) are usage
// errors, since they mean the inputs are not the shards of one matrix run.
func mergeShards(out string, shards []string, stdout io.Writer) (int, error) {
	if out == "" || len(shards) == 0 {
		return exitUsage, usagef("--merge OUT needs the shard store directories as arguments, e.g. report --merge store shard-1/store shard-2/store")
	}
	if _, err := os.Stat(out); err == nil {
		return exitUsage, usagef("--merge %s: the output directory exists; merge into a new directory so no earlier run is mixed in", out)
	}
	sum, err := reports.MergeStores(out, shards)
	if err != nil {
		return exitUsage, usageError{err.Error()}
	}
	fmt.Fprintf(stdout, "merged %d runs of %d shards (splitbrain %s)\nindex: %s\n", sum.Runs, sum.Shards, sum.Version, filepath.Join(out, reports.IndexFile))
	if sum.JUnit != "" {
		fmt.Fprintf(stdout, "junit: %s (%d rows)\n", sum.JUnit, sum.Testcase)
	}
	return exitValid, nil
}

// defaultStoreDir is $SPLITBRAIN_STORE_DIR or ./store, as for splitbrain run.
func defaultStoreDir() string {
	if d := os.Getenv("SPLITBRAIN_STORE_DIR"); d != "" {
		return d
	}
	return "store"
}
