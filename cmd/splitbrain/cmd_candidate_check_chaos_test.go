//go:build chaos

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCandidateCheckFindsMistakes runs `splitbrain candidate check` in-process on a bash
// candidate (base image, real Redis) that makes the classic mistakes: an unknown field, an
// empty reason, SIGTERM ignored, never elected. Each must be reported with its rule, and
// the exit code must say so.
func TestCandidateCheckFindsMistakes(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "bad.sh")
	body := "#!/bin/bash\ntrap '' TERM\n" +
		`echo '{"kind":"campaigning","leader":"me"}'` + "\n" +
		`echo '{"kind":"error","reason":""}'` + "\n" +
		"while true; do sleep 1; done\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := runMain([]string{"candidate", "check", "--store", "redis", "--candidate-cmd", script, "--time", "3s",
		"--nodes", "2", "--out", filepath.Join(dir, "store")}, &out, &errb)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d (problems found)", code, exitInvalid)
	}
	for _, want := range []string{"[R4] unknown-field", "[R3] empty-field", "[R11] ignores-sigterm", "[R8] never-elected", "fix:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
