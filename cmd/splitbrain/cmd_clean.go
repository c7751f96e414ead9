package main

import (
	"context"
	"fmt"
	"io"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

func init() {
	register(command{name: "clean", summary: "remove containers and networks splitbrain left behind (--images: old project images too)", run: runClean})
}

func runClean(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("clean", stderr)
	runID := fs.String("run", "", "remove only the objects of this run id (default: every object labelled "+platform.LabelProject+"="+platform.ProjectName+")")
	withImages := fs.Bool("images", false, "also remove every project image except the current set (the images this splitbrain's runs use now) and images a container uses")
	profileName := fs.String("profile", "", "with --images: the image profile whose current set is kept, local or official (default $"+images.EnvProfile+" or local)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: splitbrain clean [--run RUN_ID] [--images [--profile P]]")
		fmt.Fprintln(stderr, "Removes the containers and networks splitbrain left behind: every run's, or one run's.")
		fmt.Fprintln(stderr, "--images also removes old project images (every new splitbrain binary builds a new candidate")
		fmt.Fprintln(stderr, "image and removes older unused ones built over 15 minutes before): all but the current set, which runs use")
		fmt.Fprintln(stderr, "now, and any image a container uses. See docs/images.md.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	if *runID != "" {
		if err := platform.ValidateRunID(*runID); err != nil {
			return exitUsage, usagef("--run: %v", err)
		}
	}
	var profile images.Profile
	if *withImages {
		if *runID != "" {
			return exitUsage, usagef("--images and --run do not go together: images belong to no run")
		}
		var err error
		if profile, err = profileFlag(*profileName); err != nil {
			return exitUsage, err
		}
	} else if *profileName != "" {
		return exitUsage, usagef("--profile goes with --images")
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
	if *withImages {
		res, err := images.Prune(ctx, profile)
		for _, ref := range res.Removed {
			fmt.Fprintf(stdout, "image     %s\n", ref)
		}
		fmt.Fprintf(stdout, "removed %d image(s); kept the current set (%d) and images in use\n", len(res.Removed), len(res.Kept))
		if err != nil {
			return exitHarness, err
		}
	}
	return exitValid, nil
}
