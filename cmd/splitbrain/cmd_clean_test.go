package main

import (
	"bytes"
	"strings"
	"testing"
)

// Bad flag combinations are refused before anything is swept.
func TestCleanImagesUsage(t *testing.T) {
	for want, args := range map[string][]string{
		"--images and --run do not go together": {"clean", "--images", "--run", "20260101-000000-abcdef"},
		"--profile goes with --images":          {"clean", "--profile", "local"},
		`unknown image profile "nope"`:          {"clean", "--images", "--profile", "nope"},
	} {
		var out, errb bytes.Buffer
		if code := runMain(args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", args, code, errb.String(), exitUsage, want)
		}
	}
	var out, errb bytes.Buffer
	runMain([]string{"clean", "--help"}, &out, &errb)
	if !strings.Contains(errb.String(), "--images also removes old project images") {
		t.Errorf("clean --help does not explain --images:\n%s", errb.String())
	}
}
