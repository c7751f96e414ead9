package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
)

func init() {
	register(command{name: "candidate", summary: "run one election candidate (inside a candidate container)", run: runCandidate})
}

func runCandidate(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 && args[0] == "check" {
		return runCandidateCheck(ctx, args[1:], stdout, stderr)
	}
	fs := newFlags("candidate", stderr)
	recipe := fs.String("recipe", "", "recipe to run (default $"+contract.EnvRecipe+")")
	list := fs.Bool("list", false, "list the recipes with their store and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: splitbrain candidate [--recipe R]\n       splitbrain candidate check --store S --candidate-cmd FILE  (lint your own candidate; --help)\n\n"+
			"Runs one candidate of the candidate contract v%d (docs/candidates.md): configuration comes\n"+
			"from the SPLITBRAIN_* environment, events go to stdout as JSON lines, SIGTERM resigns.\n\n", contract.Version)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	if *list {
		for _, s := range candidates.Registry.Infos() {
			steps := ""
			if len(s.Steps) > 0 {
				steps = " [steps: " + strings.Join(s.Steps, ", ") + "]"
			}
			fmt.Fprintf(stdout, "%-22s %-10s %s%s\n", s.Name, s.Store, s.Summary, steps)
		}
		return exitValid, nil
	}
	err := runtime.Run(ctx, runtime.Options{Recipes: candidates.Registry, Recipe: *recipe, Stdout: stdout, Stderr: stderr})
	if err != nil {
		var ce *runtime.ConfigError
		if errors.As(err, &ce) {
			return exitUsage, usagef("%v", err)
		}
		return exitHarness, err
	}
	return exitValid, nil
}
