package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

func init() {
	register(command{name: "up", summary: "start a store cluster and keep it up until Ctrl-C (or --for)", run: runUp})
}

func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("up", stderr)
	store := fs.String("store", "", "store to start: "+strings.Join(stores.Kinds(), ", ")+" (required)")
	nodes := fs.Int("nodes", 0, "number of store nodes (0 = the store's default: "+storekinds.DefaultNodesText()+")")
	profileName := fs.String("profile", "", "image profile: local (build offline) or official (pull upstream); default $"+images.EnvProfile+" or local")
	forDur := fs.Duration("for", 0, "tear down by itself after this long (0 = wait for Ctrl-C/SIGTERM)")
	logDir := fs.String("log-dir", "", "directory for node logs (default: a new directory under the system temp dir)")
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	if *store == "" {
		return exitUsage, usagef("--store is required: one of %s", strings.Join(stores.Kinds(), ", "))
	}
	kind, err := stores.ParseKind(*store)
	if err != nil {
		return exitUsage, usagef("--store: %v", err)
	}
	if *forDur < 0 {
		return exitUsage, usagef("--for %v is negative: give a duration like 30s, or 0 to wait for Ctrl-C", *forDur)
	}
	profile, err := profileFlag(*profileName)
	if err != nil {
		return exitUsage, err
	}
	opts := stores.Options{Kind: kind, Nodes: *nodes, Profile: profile}
	if err := opts.Validate(); err != nil {
		return exitUsage, usagef("%v", err)
	}

	eng, err := platform.Connect(ctx)
	if err != nil {
		return exitHarness, err
	}
	defer eng.Close()

	set, results, err := images.EnsureWith(ctx, profile, images.EnsureOptions{Log: stderr}, stores.ImageRoles(kind)...)
	if err != nil {
		return exitHarness, fmt.Errorf("images for %s: %w", kind, err)
	}
	for _, r := range results {
		fmt.Fprintf(stdout, "image     %s %s (%s)\n", r.Role, r.Ref, r.Action)
	}
	opts.Images = set

	runID := platform.NewRunID()
	if *logDir == "" {
		*logDir = filepath.Join(os.TempDir(), "splitbrain-up-"+runID)
	}
	opts.LogDir = *logDir

	// Teardown runs on every path, also after Ctrl-C cancelled ctx.
	var cluster stores.Cluster
	var network *platform.Network
	defer func() {
		if err := upTeardown(ctx, eng, runID, cluster, network, stdout); err != nil {
			fmt.Fprintf(stderr, "splitbrain up: teardown: %v\n(run 'splitbrain clean --run %s' to retry)\n", err, runID)
		}
	}()

	fmt.Fprintf(stdout, "run       %s\n", runID)
	network, err = eng.NewNetwork(ctx, runID)
	if err != nil {
		return exitHarness, err
	}
	fmt.Fprintf(stdout, "network   %s %s\n", network.Name, network.Subnet)
	cluster, err = stores.Launch(ctx, eng, network, runID, opts)
	if err != nil {
		if ctx.Err() != nil {
			return exitHarness, fmt.Errorf("interrupted while starting %s", kind)
		}
		return exitHarness, err
	}
	hostEPs, err := cluster.HostEndpoints(ctx)
	if err != nil {
		return exitHarness, err
	}
	fmt.Fprintf(stdout, "store     %s %s, %d node(s), ready in %s (containers started in %s)\n", kind, cluster.Version(), len(cluster.Nodes()),
		cluster.ReadyDuration().Round(time.Millisecond), cluster.StartDuration().Round(time.Millisecond))
	if nodes := cluster.Nodes(); len(hostEPs) == len(nodes) {
		for i, n := range nodes {
			fmt.Fprintf(stdout, "node      %-8s host %-22s network %s\n", n.Name(), hostEPs[i], cluster.Endpoints()[i])
		}
	} else { // clients talk to some nodes only (kubernetes: the API server)
		for _, n := range nodes {
			fmt.Fprintf(stdout, "node      %s\n", n.Name())
		}
		for i, ep := range hostEPs {
			fmt.Fprintf(stdout, "endpoint  host %-22s network %s\n", ep, cluster.Endpoints()[i])
		}
	}
	if l, err := cluster.Leader(ctx); err == nil {
		fmt.Fprintf(stdout, "leader    %s\n", l.Name())
	} else if !errors.Is(err, stores.ErrNotSupported) {
		fmt.Fprintf(stdout, "leader    unknown (%v)\n", err)
	}
	fmt.Fprintf(stdout, "logs      %s\n", *logDir)

	wait := ctx.Done()
	if *forDur > 0 {
		fmt.Fprintf(stdout, "up for %s (Ctrl-C ends earlier)\n", *forDur)
		t := time.NewTimer(*forDur)
		defer t.Stop()
		select {
		case <-wait:
		case <-t.C:
		}
	} else {
		fmt.Fprintln(stdout, "up; Ctrl-C or SIGTERM tears it down")
		<-wait
	}
	return exitValid, nil
}

// upTeardown removes the cluster and the network, then sweeps the run id for anything else
// and reports what is left, if anything.
func upTeardown(ctx context.Context, eng *platform.Engine, runID string, cluster stores.Cluster, network *platform.Network, stdout io.Writer) error {
	var errs []error
	start := time.Now()
	if cluster != nil {
		errs = append(errs, cluster.Close(ctx))
	}
	if network != nil {
		errs = append(errs, network.Remove(ctx))
	}
	if _, err := eng.Sweep(ctx, platform.SweepFilter{RunID: runID}); err != nil {
		errs = append(errs, err)
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if left, err := eng.Leftovers(lctx, runID); err != nil {
		errs = append(errs, err)
	} else if !left.Empty() {
		errs = append(errs, fmt.Errorf("left behind: %s", left))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if network != nil {
		fmt.Fprintf(stdout, "torn down in %s\n", time.Since(start).Round(time.Millisecond))
	}
	return nil
}
