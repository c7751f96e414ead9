package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/shrink"
)

// Bad input to replay and shrink: exit 64 with a message naming the problem.
func TestReplayShrinkUsage(t *testing.T) {
	root := t.TempDir()
	valid := filepath.Join(root, "redis-redis-setnx-x", "20261122T000000.000Z")
	os.MkdirAll(valid, 0o755)
	b, err := os.ReadFile("../../reports/runconfig/testdata/run/config.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(valid, "config.json"), b, 0o644)
	os.WriteFile(filepath.Join(valid, "results.json"), []byte(`{"verdict":"valid","reasons":[]}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "give one run directory"},
		{[]string{"replay", root, "--times", "0"}, "--times 0"},
		{[]string{"replay", root}, "not a run directory"},
		{[]string{"shrink", valid, "--tries", "0"}, "--tries must be >= 1"},
		{[]string{"shrink", valid}, "is valid: the run is not invalid"},
	} {
		var out, errb strings.Builder
		code := runMain(tc.args, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 64 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// An edited config.json given to replay or shrink is bounded and checked before anything is
// planned or started: a huge --time or a 1ns TTL once planned billions of occurrences, and
// a given plan's faults were trusted whole.
func TestReplayRefusesTamperedConfig(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-replay-test.sock")
	b, err := os.ReadFile("../../reports/runconfig/testdata/run/config.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(cfg map[string]any)
		want string
	}{
		// shrink takes its phases from the plan; replay from the flags.
		{"time", func(c map[string]any) { c["flags"].(map[string]any)["time"] = "2562047h" }, "--time 2562047h"},
		{"ttl", func(c map[string]any) { c["flags"].(map[string]any)["ttl"] = "1ns" }, "--ttl 1ns"},
		{"phase", func(c map[string]any) {
			c["plan"].(map[string]any)["fault_phase"] = "2562047h"
			c["flags"].(map[string]any)["time"] = "2562047h"
		}, "2562047h"},
		{"kind", func(c map[string]any) { fault(c, 0)["kind"] = "rm-rf" }, `unknown fault kind "rm-rf"`},
		{"at", func(c map[string]any) { fault(c, 0)["at"] = "-1000h" }, "does not fit"},
		{"many", func(c map[string]any) {
			plan := c["plan"].(map[string]any)
			f := fault(c, 0)
			var all []any
			for i := range 5000 {
				g := map[string]any{}
				for k, v := range f {
					g[k] = v
				}
				g["id"] = i + 1
				all = append(all, g)
			}
			plan["faults"] = all
		}, "more than 1000"},
	} {
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		tc.edit(cfg)
		dir := filepath.Join(t.TempDir(), "redis-redis-setnx-x", "20261122T000000.000Z")
		os.MkdirAll(dir, 0o755)
		edited, _ := json.Marshal(cfg)
		os.WriteFile(filepath.Join(dir, "config.json"), edited, 0o644)
		os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"verdict":"invalid","reasons":[{"code":"stale-write-accepted","severity":"invalid"}]}`), 0o644)
		for _, cmd := range []string{"replay", "shrink"} {
			if cmd == "shrink" && (tc.name == "time" || tc.name == "ttl") {
				continue
			}
			var out, errb strings.Builder
			code := runMain([]string{cmd, dir}, &out, &errb)
			if code != exitUsage || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("%s of a config.json with %s edited: exit %d, stderr %.300q; want 64 and %q", cmd, tc.name, code, errb.String(), tc.want)
			}
		}
	}
}

func fault(cfg map[string]any, i int) map[string]any {
	return cfg["plan"].(map[string]any)["faults"].([]any)[i].(map[string]any)
}

// check, report, replay and shrink read a run directory through one reader: a FIFO or a
// link to /dev/zero is refused at once (they once hung or ran out of memory).
func TestRunDirReadersRefuseHostileFiles(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-replay-test.sock")
	for _, plant := range []func(p string) error{
		func(p string) error { return syscall.Mkfifo(p, 0o644) },
		func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		dir := writeRun(t, leaderRun(runShape{}))
		if err := plant(filepath.Join(dir, "config.json")); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"check", dir}, {"report", dir}, {"replay", dir}, {"shrink", dir}} {
			done := make(chan int, 1)
			var out, errb strings.Builder
			go func() { done <- runMain(args, &out, &errb) }()
			select {
			case code := <-done:
				if code == exitValid || (args[0] != "report" && !strings.Contains(errb.String(), "config.json")) {
					t.Errorf("%v with a hostile config.json: exit %d, stderr %.300q", args, code, errb.String())
				}
			case <-time.After(time.Minute):
				t.Fatalf("%v hung on a hostile config.json", args)
			}
		}
	}
}

// replay with no Docker engine: every try is a harness error, so the exit is 255 (not 1,
// "did not reproduce"), it stops after MaxReplayErrorsInARow tries instead of starting all
// of them, and error text (which can quote candidate output) reaches the terminal escaped.
// shrink's lines are escaped the same way.
func TestReplayHarnessErrorsAndEscapes(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-replay-test.sock")
	b, err := os.ReadFile("../../reports/runconfig/testdata/run/config.json")
	if err != nil {
		t.Fatal(err)
	}
	// Paths whose names carry terminal escapes: they show up in the lines and errors.
	dir := filepath.Join(t.TempDir(), "st\x1b[31more", "redis-redis-setnx-x", "20261122T000000.000Z")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
	os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"verdict":"invalid","reasons":[{"code":"stale-write-accepted","severity":"invalid"}]}`), 0o644)
	out := filepath.Join(t.TempDir(), "evil\x1b]0;PWNED\x07\x1b[2J")
	var stdout, stderr strings.Builder
	code := runMain([]string{"replay", dir, "--times", "10", "--quiet", "--out", out}, &stdout, &stderr)
	if code != exitHarness {
		t.Errorf("replay with no engine: exit %d, want %d; stderr %q", code, exitHarness, stderr.String())
	}
	if n := strings.Count(stdout.String(), "error: "); n != shrink.MaxReplayErrorsInARow {
		t.Errorf("replay started %d tries with no engine, want it to stop after %d:\n%s", n, shrink.MaxReplayErrorsInARow, stdout.String())
	}
	if strings.ContainsRune(stdout.String()+stderr.String(), 0x1b) {
		t.Errorf("replay printed a raw ESC:\n%q", stdout.String()+stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	runMain([]string{"shrink", dir, "--tries", "1", "--out", out}, &stdout, &stderr)
	if !strings.Contains(stdout.String(), `\x1b`) || strings.ContainsRune(stdout.String()+stderr.String(), 0x1b) {
		t.Errorf("shrink printed a raw ESC (or did not show the escaped one):\n%q", stdout.String()+stderr.String())
	}
}
