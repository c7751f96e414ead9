package main

import (
	"context"
	"fmt"
	"io"
	"os"
)

func init() {
	register(command{name: "rename", summary: "replace a file by renaming (inside containers without mv; the nemesis uses it)", run: runRename})
}

// runRename exists because the FROM-scratch candidate image has no mv: the nemesis writes the
// clock-offset file under a temporary name and renames it over the old one with this command,
// so a candidate never reads an empty or half-written offset (docs/candidates.md, R14).
func runRename(_ context.Context, args []string, _, stderr io.Writer) (int, error) {
	if len(args) != 2 {
		fmt.Fprint(stderr, "Usage: splitbrain rename FROM TO\n\nRenames FROM over TO in one step (rename(2)); both must be on the same file system.\n")
		return exitUsage, usagef("want exactly two paths, FROM and TO; got %d argument(s)", len(args))
	}
	if err := os.Rename(args[0], args[1]); err != nil {
		return exitHarness, err
	}
	return exitValid, nil
}
