package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/explore"
	"github.com/splitbrain-chaos/splitbrain/shrink"
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
	printExploreSummary(&b, explore.Result{Tries: []explore.Try{f}, Finds: []explore.Try{f}, Found: &f, Stop: explore.StopFound}, time.Minute)
	if !strings.Contains(b.String(), "VIOLATION in try 4") || !strings.Contains(b.String(), "  late writes, window only: 0 sent after the next leader's election; 1 in flight at the takeover (sent before it, accepted up to 35ms after") {
		t.Fatalf("summary lacks the late-writes line:\n%s", b.String())
	}
}

// The summary lists every distinct find with its cause, how often it came again, and the
// runs set aside by --accept.
func TestExploreSummaryListsFindsByCause(t *testing.T) {
	own := &checkers.Cause{Class: checkers.CauseOwnLogic, Key: "own-logic|stale-write-accepted", Evidence: "no store crash ... before the first violation at +9s"}
	amnesia := &checkers.Cause{Class: checkers.CauseStoreAmnesia, Key: "store-amnesia|token-duplicate", Evidence: "redis crashed at +5s and restarted empty at +5.1s"}
	f1 := explore.Try{N: 2, Verdict: "invalid", Codes: []string{"stale-write-accepted"}, RunDir: "/tmp/a", Cause: own}
	f2 := explore.Try{N: 5, Verdict: "invalid", Codes: []string{"leader-overlap"}, RunDir: "/tmp/b", Cause: &checkers.Cause{Class: checkers.CauseClockStep, Key: "clock-step|leader-overlap", Evidence: "c1 had its clock stepped"}}
	aside := explore.Try{N: 1, Verdict: "invalid", Codes: []string{"token-duplicate"}, RunDir: "/tmp/c", Cause: amnesia, SetAside: true}
	var b strings.Builder
	printExploreSummary(&b, explore.Result{Tries: []explore.Try{aside, f1, f2}, Finds: []explore.Try{f1, f2}, Found: &f1, SetAside: []explore.Try{aside},
		Repeats: map[string]int{own.Key: 3}, Stop: explore.StopFound}, time.Minute)
	for _, want := range []string{
		"set aside (--accept store-amnesia): try 1, invalid token-duplicate, /tmp/c",
		"VIOLATION 1 of 2 in try 2", "cause:   own-logic: no store crash", "seen again in 3 later run(s)",
		"VIOLATION 2 of 2 in try 5", "cause:   clock-step: c1 had its clock stepped",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// --accept takes only the classes that are not the candidate's own logic; --finds is bounded.
func TestExploreAcceptAndFindsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--accept", "own-logic"}, "--accept own-logic: that is the candidate's own bug"},
		{[]string{"--accept", "store-amensia"}, `--accept "store-amensia": not a cause class; want some of store-amnesia, eviction, clock-step, fence-lie`},
		{[]string{"--finds", "0"}, "--finds 0: want 1..20"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"explore", "--store", "etcd", "--recipe", "etcd-election", "--time", "10s"}, tc.args...)
		if code := runMain(args, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, errOut.String(), tc.want)
		}
		if strings.Contains(out.String(), "try 1") {
			t.Errorf("%v: a run started", tc.args)
		}
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

// TestMinimizeFindsMergesAReclassedFind: a clock-step find whose shrunk line fails on its own
// logic is the own-logic find that came after it: said once, and that find is not shrunk
// again when the line reproduces; when the line is a race, it is shrunk in turn.
func TestMinimizeFindsMergesAReclassedFind(t *testing.T) {
	codes := "fenced-register-illegal,interleaving,stale-write-accepted"
	finds := func() explore.Result {
		return explore.Result{Finds: []explore.Try{
			{N: 2, Cause: &checkers.Cause{Class: checkers.CauseClockStep, Key: checkers.CauseClockStep + "|" + codes}},
			{N: 4, Cause: &checkers.Cause{Class: checkers.CauseOwnLogic, Key: checkers.CauseOwnLogic + "|" + codes}},
		}}
	}
	ownLogic := &checkers.Cause{Class: checkers.CauseOwnLogic, Key: checkers.CauseOwnLogic + "|stale-write-accepted"}
	for _, tc := range []struct {
		name       string
		reproduced int
		shrunk     []int
	}{{"reproduces", 5, []int{2}}, {"a race", 1, []int{2, 4}}} {
		res := finds()
		var shrunk []int
		var out bytes.Buffer
		minimizeFinds(context.Background(), &out, &res, func(f *explore.Try) (explore.Minimized, bool) {
			shrunk = append(shrunk, f.N)
			m := explore.Minimized{Reproduced: tc.reproduced, Repro: make([]shrink.Outcome, 5)}
			if f.N == 2 {
				m.Cause = ownLogic
			}
			return m, true
		})
		if !slices.Equal(shrunk, tc.shrunk) {
			t.Errorf("%s: shrunk tries %v, want %v", tc.name, shrunk, tc.shrunk)
		}
		if !strings.Contains(out.String(), "find 2 (try 4) has this cause too (own-logic): one find") || !strings.Contains(out.String(), "distinct finds after the shrink: 1 of 2") {
			t.Errorf("%s: output does not say the two finds are one:\n%s", tc.name, out.String())
		}
	}
}
