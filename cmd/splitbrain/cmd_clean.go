package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

func init() {
	register(command{name: "clean", summary: "remove containers and networks splitbrain left behind (--images: old project images too)", run: runClean})
}

func runClean(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("clean", stderr)
	runID := fs.String("run", "", "remove the objects of this run id (the id a run prints, e.g. 20261122-040251-3dac9a)")
	all := fs.Bool("all", false, "remove every object labelled "+platform.LabelProject+"="+platform.ProjectName+": every run's on this engine, other users' live runs too (asks first on a terminal)")
	yes := fs.Bool("yes", false, "with --all: do not ask")
	withImages := fs.Bool("images", false, "also remove every project image except the current set (the images this splitbrain's runs use now) and images a container uses")
	profileName := fs.String("profile", "", "with --images: the image profile whose current set is kept, local or official (default $"+images.EnvProfile+" or local)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: splitbrain clean --run RUN_ID | --all [--yes] | --images [--profile P]")
		fmt.Fprintln(stderr, "Removes the containers and networks splitbrain left behind: one run's (--run), or every run's (--all,")
		fmt.Fprintln(stderr, "which also removes runs in progress, other users' included; it asks first when stdin is a terminal).")
		fmt.Fprintln(stderr, "--images also removes old project images (every new splitbrain binary builds a new candidate")
		fmt.Fprintln(stderr, "image and removes older unused ones built over 15 minutes before): all but the current set, which runs use")
		fmt.Fprintln(stderr, "now, and any image a container uses. See docs/images.md.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	// An empty --run must not mean "everything": `clean --run "$ID"` with ID unset would
	// destroy every run on the machine.
	runGiven := false
	fs.Visit(func(f *flag.Flag) { runGiven = runGiven || f.Name == "run" })
	switch {
	case *yes && !*all:
		return exitUsage, usagef("--yes goes with --all")
	case runGiven && *all:
		return exitUsage, usagef("--run and --all do not go together: --run removes one run, --all every run")
	case runGiven:
		if err := platform.ValidateRunID(*runID); err != nil {
			return exitUsage, usagef("--run: %v", err)
		}
	case !*all && !*withImages && *profileName == "":
		return exitUsage, usagef("say what to remove: --run RUN_ID (one run's objects) or --all (every run's, other users' live runs too)")
	}
	if *all && !*yes && cleanInteractive() {
		fmt.Fprintf(stderr, "Remove every splitbrain container and network on this Docker engine, including runs in progress (other users' too)? [y/N] ")
		answer, _ := bufio.NewReader(cleanStdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(stderr, "nothing removed")
			return exitUsage, nil
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
	if !runGiven && !*all { // --images alone: images only
		return pruneImages(ctx, profile, stdout)
	}
	rep, err := eng.Sweep(ctx, platform.SweepFilter{RunID: *runID})
	scope := "all runs"
	if runGiven {
		scope = "run " + *runID
	}
	printSweep(stdout, rep, scope)
	if err != nil {
		return exitHarness, err
	}
	if *withImages {
		return pruneImages(ctx, profile, stdout)
	}
	return exitValid, nil
}

// printSweep lists what a sweep removed and what it could not: a network still in use says
// which run holds it, and the summary counts it.
func printSweep(w io.Writer, rep platform.SweepReport, scope string) {
	for _, c := range rep.Thawed {
		fmt.Fprintf(w, "thawed    %s\n", c)
	}
	for _, c := range rep.Containers {
		fmt.Fprintf(w, "container %s\n", c)
	}
	for _, n := range rep.Networks {
		fmt.Fprintf(w, "network   %s\n", n)
	}
	for _, n := range rep.InUse {
		fmt.Fprintf(w, "in use    %s\n", n.Hint())
	}
	inUse := ""
	if len(rep.InUse) > 0 {
		inUse = fmt.Sprintf("; %d network(s) still in use, see above", len(rep.InUse))
	}
	switch {
	case rep.Empty() && inUse == "":
		fmt.Fprintf(w, "nothing to remove (%s)\n", scope)
	default:
		fmt.Fprintf(w, "removed %d container(s), %d network(s) (%s)%s\n", len(rep.Containers), len(rep.Networks), scope, inUse)
	}
}

func pruneImages(ctx context.Context, profile images.Profile, stdout io.Writer) (int, error) {
	res, err := images.Prune(ctx, profile)
	for _, ref := range res.Removed {
		fmt.Fprintf(stdout, "image     %s\n", ref)
	}
	fmt.Fprintf(stdout, "removed %d image(s); kept the current set (%d) and images in use\n", len(res.Removed), len(res.Kept))
	if err != nil {
		return exitHarness, err
	}
	return exitValid, nil
}

// cleanStdin and cleanInteractive are where --all's confirmation comes from (tests swap them).
var (
	cleanStdin       io.Reader = os.Stdin
	cleanInteractive           = func() bool {
		fi, err := os.Stdin.Stat()
		return err == nil && fi.Mode()&os.ModeCharDevice != 0
	}
)
