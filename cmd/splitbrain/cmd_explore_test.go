package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/explore"
)

func TestExploreRefusesBadInputBeforeAnyRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--faults", "bogus"}, `unknown fault kind "bogus"`},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--faults", "pause:target=nowhere"}, "pause takes: pause:target=leader"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--budget", "0"}, "give a time budget"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--max-faults", "0"}, "want at least 1"},
		{[]string{"--store", "redis", "--recipe", "etcd-election", "--time", "10s"}, `runs on store "etcd"`},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--nemesis", "pause-leader"}, "nemesis"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--mode", "smart"}, `--mode "smart": want guided or random`},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--resume"}, "--resume needs --corpus FILE"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--mode", "random", "--corpus", "x.json"}, "belong to --mode guided"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--corpus", "/nonexistent/c.json", "--resume"}, "drop --resume"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--repro", "-1"}, "--repro must be >= 0"},
	} {
		var out, errOut bytes.Buffer
		code := runMain(append([]string{"explore"}, c.args...), &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("explore %v: exit %d, stderr %q; want %d and %q", c.args, code, errOut.String(), exitUsage, c.want)
		}
		if strings.Contains(out.String(), "try 1") {
			t.Errorf("explore %v started a run", c.args)
		}
	}
}

// A corpus grown on another store/recipe is refused before any run; one grown here loads.
func TestExploreResumeChecksTheCorpusTarget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "corpus.json")
	if err := explore.NewCorpus("redis/redis-setnx/unfenced", 9).Save(path); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := runMain([]string{"explore", "--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--corpus", path, "--resume"}, &out, &errOut)
	if code != exitUsage || !strings.Contains(errOut.String(), "was grown on redis/redis-setnx/unfenced, this search is on etcd/etcd-election/fenced") {
		t.Errorf("exit %d, stderr %q; want the target mismatch named", code, errOut.String())
	}
	if strings.Contains(out.String(), "try 1") {
		t.Error("a run started")
	}
}

// The summary of a find says whether its late writes were the check-then-send window only.
func TestExploreSummaryShowsTheLateWrites(t *testing.T) {
	var b strings.Builder
	f := explore.Try{N: 4, Verdict: "invalid", Codes: []string{"stale-write-accepted"}, RunDir: "/tmp/run",
		Late: &checkers.LateWrites{InFlight: 1, MaxLag: 35 * time.Millisecond}}
	printExploreSummary(&b, explore.Result{Tries: []explore.Try{f}, Found: &f, Stop: explore.StopFound}, time.Minute)
	if !strings.Contains(b.String(), "VIOLATION in try 4") || !strings.Contains(b.String(), "  late writes, window only: 0 sent after the next leader's election; 1 in flight at the takeover (sent before it, accepted up to 35ms after") {
		t.Fatalf("summary lacks the late-writes line:\n%s", b.String())
	}
}

// With no engine every try is a harness error at once: explore stops after three in a row
// with 255 and says why, instead of starting runs (13 a second) until its budget.
func TestExploreStopsAfterHarnessErrorsInARow(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-explore-test.sock")
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"explore", "--store", "redis", "--recipe", "redis-setnx", "--time", "20s", "--budget", "10m", "--out", out}, &stdout, &stderr)
	if code != exitHarness || !strings.Contains(stderr.String(), "3 runs in a row could not run, so no more are started") {
		t.Errorf("exit %d, stderr %q: want %d and the reason", code, stderr.String(), exitHarness)
	}
	if n := strings.Count(stdout.String(), ": harness error: "); n != 3 || !strings.Contains(stdout.String(), "stopped: harness-errors") {
		t.Errorf("%d tries reported, want 3 and the summary's stop reason:\n%s", n, stdout.String())
	}
}
