package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

func init() {
	register(command{name: "version", summary: "print the splitbrain version", run: runVersion})
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if err := parseFlags(newFlags("version", stderr), args, false); err != nil {
		return exitUsage, err
	}
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fmt.Fprintln(stdout, "splitbrain", v)
	return exitValid, nil
}
