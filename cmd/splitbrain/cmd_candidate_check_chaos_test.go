//go:build chaos

package main

import (
	"bytes"
	"os"
	"os/exec"
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

// TestCandidateCheckStoreMistakes runs `splitbrain candidate check` in-process on candidates
// that miss their store the usual ways (docs/candidates.md section 8): the broken twins of
// examples/stores/dynamodb (endpoint without http://) and examples/stores/consul (consul/api's
// default 127.0.0.1:8500) against the real stores, and a script that requires
// SPLITBRAIN_STORE_ENDPOINTS with store none. Each must be reported with its rule and a fix
// that names what to do, and the exit code must say "problems found".
func TestCandidateCheckStoreMistakes(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..")) // go test runs a package's tests in its directory
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	twin := func(pkg string) string {
		bin := filepath.Join(dir, filepath.Base(pkg)+"-broken")
		cmd := exec.Command("go", "build", "-tags", "broken", "-o", bin, "./"+pkg)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build -tags broken ./%s: %v\n%s", pkg, err, out)
		}
		return bin
	}
	script := filepath.Join(dir, "needs-endpoints.sh")
	body := "#!/bin/sh\n[ -n \"$SPLITBRAIN_STORE_ENDPOINTS\" ] || { echo 'SPLITBRAIN_STORE_ENDPOINTS is not set' >&2; exit 64; }\nexec sleep 60\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		store, cmd string
		want       []string
	}{
		{"none", script, []string{"[R15] requires-unset-variable", "SPLITBRAIN_PEERS"}},
		{"dynamodb", twin("examples/stores/dynamodb"), []string{"[R12] endpoint-without-scheme", `"http://" + the endpoint`}},
		{"consul", twin("examples/stores/consul"), []string{"[R12] consul-default-address", "api.Config{Address: ep"}},
	} {
		t.Run(c.store, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runMain([]string{"candidate", "check", "--store", c.store, "--candidate-cmd", c.cmd, "--time", "4s",
				"--nodes", "3", "--out", filepath.Join(dir, "store-"+c.store)}, &out, &errb)
			t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
			if code != exitInvalid {
				t.Fatalf("exit %d, want %d (problems found)", code, exitInvalid)
			}
			for _, want := range c.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q", want)
				}
			}
		})
	}
}

// TestCandidateCheckCutLeader runs `candidate check --cut-leader` on a Redis candidate with
// go-redis's default timeouts and no local deadline (testdata/slow-redis-candidate): cut off
// from the real Redis by real iptables rules, its leader believes on for longer than TTL +
// 1 s, which must be reported as leader-outlives-cut with its rule.
func TestCandidateCheckCutLeader(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "slow-redis-candidate")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/slow-redis-candidate")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var out, errb bytes.Buffer
	code := runMain([]string{"candidate", "check", "--store", "redis", "--candidate-cmd", bin, "--cut-leader", "--time", "60s",
		"--out", filepath.Join(dir, "store")}, &out, &errb)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d (problems found)", code, exitInvalid)
	}
	for _, want := range []string{"with the leader cut off once", "[R16] leader-outlives-cut", "local deadline"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestCandidateCheckTimeoutProvesNothing: the check phase ends on events (three handoffs);
// a --time too short for them leaves a run that proved nothing, which must exit 2 (unknown),
// never 0, even though no problem was found.
func TestCandidateCheckTimeoutProvesNothing(t *testing.T) {
	var out, errb bytes.Buffer
	code := runMain([]string{"candidate", "check", "--store", "redis", "--recipe", "redis-setnx", "--time", "1s",
		"--out", filepath.Join(t.TempDir(), "store")}, &out, &errb)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	if code != exitUnknown {
		t.Fatalf("exit %d, want %d (the run ran out of --time before three handoffs)", code, exitUnknown)
	}
	if !strings.Contains(out.String(), "proves nothing") {
		t.Error("output does not say the run proved nothing")
	}
}
