package main

import (
	"context"
	"fmt"
	"io"

	"github.com/splitbrain-chaos/splitbrain/harness/platform"
)

func init() {
	register(command{name: "clean", summary: "remove containers and networks splitbrain left behind", run: runClean})
}

func runClean(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("clean", stderr)
	runID := fs.String("run", "", "remove only the objects of this run id (default: every object labelled "+platform.LabelProject+"="+platform.ProjectName+")")
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	if *runID != "" {
		if err := platform.ValidateRunID(*runID); err != nil {
			return exitUsage, usagef("--run: %v", err)
		}
	}
	eng, err := platform.Connect(ctx)
	if err != nil {
		return exitHarness, err
	}
	defer eng.Close()
	rep, err := eng.Sweep(ctx, platform.SweepFilter{RunID: *runID})
	scope := "all runs"
	if *runID != "" {
		scope = "run " + *runID
	}
	for _, c := range rep.Thawed {
		fmt.Fprintf(stdout, "thawed    %s\n", c)
	}
	for _, c := range rep.Containers {
		fmt.Fprintf(stdout, "container %s\n", c)
	}
	for _, n := range rep.Networks {
		fmt.Fprintf(stdout, "network   %s\n", n)
	}
	if rep.Empty() {
		fmt.Fprintf(stdout, "nothing to remove (%s)\n", scope)
	} else {
		fmt.Fprintf(stdout, "removed %d container(s), %d network(s) (%s)\n", len(rep.Containers), len(rep.Networks), scope)
	}
	if err != nil {
		return exitHarness, err
	}
	return exitValid, nil
}
