package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/internal/progress"
	"github.com/splitbrain-chaos/splitbrain/reports"
)

func init() {
	register(command{name: "check", summary: "re-analyse a stored run (no containers): verdict, results.json, visualizations", run: runCheck})
}

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("check", stderr)
	require := fs.String("require", "", "extra requirements, comma-separated: exclusive (any leadership overlap is invalid), liveness (liveness failures are invalid); default: those stored in config.json")
	ptimeout := fs.Duration("porcupine-timeout", 0, "time limit per Porcupine model (0 = stored value or 60s; negative skips Porcupine); a timeout gives unknown")
	asJSON := fs.Bool("json", false, "print the results document to stdout instead of the summary")
	write := fs.Bool("write", false, "replace RUN_DIR/results.json, the Porcupine visualizations and report.html with this check's (default: write nothing)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: splitbrain check RUN_DIR [--require exclusive,liveness] [--porcupine-timeout D] [--json] [--write]")
		fmt.Fprintln(stderr, "Re-checks RUN_DIR/history.jsonl with the parameters in RUN_DIR/config.json (key \"check\"): with the")
		fmt.Fprintln(stderr, "stored parameters it reproduces the verdict and reasons of 'splitbrain run' exactly. It changes no file")
		fmt.Fprintln(stderr, "unless --write is given, and exits 0 valid, 1 invalid, 2 unknown.")
		fs.PrintDefaults()
	}
	dir, err := parseRunDirArgs(fs, args)
	if err != nil {
		return exitUsage, err
	}
	if dir == "" {
		return exitUsage, usagef("missing RUN_DIR: the run directory holding history.jsonl (e.g. store/<test>/latest)")
	}
	if err := requireDir(dir); err != nil {
		return exitUsage, err
	}
	p, err := checkers.LoadParams(dir)
	if err != nil {
		return exitHarness, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["require"] {
		reqs, err := checkers.ParseRequirements(*require)
		if err != nil {
			return exitUsage, usagef("--require: %v", err)
		}
		p.Require = reqs
	}
	if set["porcupine-timeout"] {
		p.PorcupineTimeout = checkers.Duration(*ptimeout)
	}
	p.OutputDir = ""
	if *write {
		p.OutputDir = dir
	}
	res, info, err := checkers.CheckDir(ctx, dir, p)
	if err != nil {
		return exitHarness, err
	}
	if info.TruncatedTail {
		fmt.Fprintf(stderr, "note: %s ends in a partial line (the writer was cut off); it was ignored\n", filepath.Join(dir, checkers.HistoryFile))
	}
	if *write {
		if _, err := reports.WriteResults(dir, res); err != nil {
			return exitHarness, err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		if err := enc.Encode(res); err != nil {
			return exitHarness, err
		}
	} else {
		res.Summary(progress.PrintableWriter{W: stdout}) // reasons quote candidate output
		where := "not written (--write replaces " + filepath.Join(dir, checkers.ResultsFile) + ")"
		if *write {
			where = filepath.Join(dir, checkers.ResultsFile)
		}
		fmt.Fprintf(stdout, "results: %s (checked in %v)\n", where, time.Duration(res.CheckNs).Round(time.Millisecond))
		if stored, err := checkers.ReadResults(filepath.Join(dir, checkers.ResultsFile)); err == nil && !*write {
			if d := checkers.Disagreements(stored, res); len(d) > 0 {
				fmt.Fprintf(stdout, "differs from the stored results.json: %s\n", progress.Printable(strings.Join(d, "; ")))
			}
		}
	}
	if *write {
		// The report must show the new verdict, not the one it was first rendered with.
		if err := reports.RenderRun(dir); err != nil {
			fmt.Fprintf(stderr, "splitbrain check: report not rendered: %v\n", err)
		}
	}
	return res.Verdict.ExitCode(), nil
}

// parseRunDirArgs parses flags given before or after one optional RUN_DIR and returns it
// ("" when absent): `check DIR --json` and `check --json DIR` both work.
func parseRunDirArgs(fs *flag.FlagSet, args []string) (string, error) {
	var dir string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		dir, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, true); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return dir, nil
	}
	extra := fs.Arg(0)
	if dir == "" {
		if fs.NArg() == 1 {
			return fs.Arg(0), nil
		}
		extra = fs.Arg(1)
	}
	return "", usagef("unexpected argument %q: one RUN_DIR only (flags go before or after it)", extra)
}

// requireDir checks that RUN_DIR names a directory.
func requireDir(dir string) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usagef("RUN_DIR %q is not a directory", dir)
	}
	return nil
}
