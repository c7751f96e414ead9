//go:build !core

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
)

func init() {
	register(command{name: candidates.SidecarCommand, summary: "the k8s-sidecar recipe's leader-election sidecar (started by its candidate, inside the container)", run: runLeaseSidecar})
}

func runLeaseSidecar(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags(candidates.SidecarCommand, stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: splitbrain %s\n\n"+
			"The sidecar process of the k8s-sidecar recipe (docs/candidates.md): client-go leader\n"+
			"election on a Lease, reported on GET /leader of the listening socket its candidate\n"+
			"passes as file descriptor 3 (or as the descriptor %s names);\n"+
			"without one (started by hand) on http://127.0.0.1:7070/leader. Its candidate starts\n"+
			"it with argv[0] %q; configuration comes from the candidate's SPLITBRAIN_* environment.\n", candidates.SidecarCommand, candidates.EnvSidecarListenFD, candidates.SidecarArgv0)
	}
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	err := candidates.RunLeaseSidecar(ctx, os.LookupEnv, stdout, stderr)
	var ce *runtime.ConfigError
	if errors.As(err, &ce) {
		return exitUsage, usagef("%v", err)
	}
	if err != nil {
		return exitHarness, err
	}
	return exitValid, nil
}
