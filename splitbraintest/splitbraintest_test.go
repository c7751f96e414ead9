package splitbraintest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCandidateValidate(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "cand")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    Candidate
		want []string // substrings of the error; none: valid
	}{
		{Candidate{Store: "etcd", Cmd: exe}, nil},
		{Candidate{Store: "etcd", Recipe: "etcd-election"}, nil},
		{Candidate{Store: "redis", Cmd: exe, Packages: []string{"python3"}}, nil},
		{Candidate{Cmd: exe}, []string{"Candidate.Store is empty"}},
		{Candidate{Store: "etcd"}, []string{"exactly one of", "(0 set)"}},
		{Candidate{Store: "etcd", Cmd: exe, Recipe: "etcd-election"}, []string{"(2 set)"}},
		{Candidate{Store: "etcd", Image: "x", Packages: []string{"curl"}}, []string{"Packages needs Candidate.Cmd"}},
		{Candidate{Store: "etcd", Cmd: plain}, []string{"not an executable file", "BuildGo"}},
		{Candidate{Store: "etcd", Cmd: filepath.Join(t.TempDir(), "missing")}, []string{"Candidate.Cmd:", "no such file"}},
	} {
		err := tc.c.validate(true)
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%+v: unexpected error %v", tc.c, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%+v: no error, want one naming %q", tc.c, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q does not say %q", tc.c, err, w)
			}
		}
	}
}

// defaultBudget is assess.DefaultBudget, spelled out: this package's tests import nothing
// heavy either, or a user's go mod tidy would still list every store client
// (cmd/splitbrain's TestAssessDrivenList checks the --driven plan's default is it).
const defaultBudget = 10 * time.Minute

func TestFitBudget(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		budget      time.Duration
		chosen      bool
		timeout     time.Duration // 0: no deadline
		want        time.Duration
		wantNote    bool
		wantErrPart string
	}{
		{"no deadline keeps the budget", defaultBudget, false, 0, defaultBudget, false, ""},
		{"default fits a long timeout", defaultBudget, false, time.Hour, defaultBudget, false, ""},
		{"default lowered to a short timeout", defaultBudget, false, 6 * time.Minute, 6*time.Minute - cleanupMargin, true, ""},
		{"chosen budget that fits", 3 * time.Minute, true, 10 * time.Minute, 3 * time.Minute, false, ""},
		{"chosen budget that does not fit", 20 * time.Minute, true, 10 * time.Minute, 0, false, "-timeout 26m"},
		{"timeout too short for anything", defaultBudget, false, time.Minute, 0, false, "too little for any check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.budget
			note, err := fitBudget(&b, tc.chosen, now.Add(tc.timeout), tc.timeout > 0, now)
			if tc.wantErrPart != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrPart) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErrPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b != tc.want {
				t.Errorf("budget %v, want %v", b, tc.want)
			}
			if (note != "") != tc.wantNote {
				t.Errorf("note %q, want a note: %v", note, tc.wantNote)
			}
		})
	}
}

type recorder struct{ lines []string }

func (r *recorder) Log(args ...any) {
	for _, a := range args {
		r.lines = append(r.lines, a.(string))
	}
}

func TestLineLoggerWholeLinesToTheAttachedTest(t *testing.T) {
	var a, b recorder
	l := &lineLogger{}
	l.attach(&a)
	l.Write([]byte("one\ntw"))
	l.Write([]byte("o\r\n"))
	l.attach(&b)
	l.Write([]byte("three\n"))
	l.detach()
	l.Write([]byte("after the test\n")) // dropped, not logged to a finished test
	if got := strings.Join(a.lines, "|"); got != "one|two" {
		t.Errorf("first test got %q, want one|two", got)
	}
	if got := strings.Join(b.lines, "|"); got != "three" {
		t.Errorf("second test got %q, want three", got)
	}
}

// TestOutDirKeptOnlyOnFailure: the fresh scorecard directory outlives a failed test (its
// reports are the evidence) and is gone after a passing one.
func TestOutDirKeptOnlyOnFailure(t *testing.T) {
	t.Setenv(EnvDir, "")
	var passedDir string
	t.Run("passes", func(t *testing.T) { passedDir = outDir(t, "") })
	if _, err := os.Stat(passedDir); !os.IsNotExist(err) {
		t.Errorf("%s still there after a passing test (%v)", passedDir, err)
	}
	// A failing test, in a child process so that its failure is not this test's.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFailingTestWithOutDir$", "-test.v")
	cmd.Env = append(os.Environ(), "SPLITBRAINTEST_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the helper test passed, want a failure:\n%s", out)
	}
	m := regexp.MustCompile(`outdir=(\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the helper printed no outdir=:\n%s", out)
	}
	failedDir := string(m[1])
	defer os.RemoveAll(failedDir)
	if fi, err := os.Stat(failedDir); err != nil || !fi.IsDir() {
		t.Errorf("%s is gone after a failing test (%v)", failedDir, err)
	}
	if !strings.Contains(string(out), "kept in "+failedDir) {
		t.Errorf("the failing test does not log where its reports were kept:\n%s", out)
	}

	named := filepath.Join(t.TempDir(), "named")
	if got := outDir(t, named); got != named {
		t.Errorf("named dir %s, want %s", got, named)
	}
	if fi, err := os.Stat(named); err != nil || !fi.IsDir() {
		t.Errorf("named dir not created: %v", err)
	}
}

func TestHelperFailingTestWithOutDir(t *testing.T) {
	if os.Getenv("SPLITBRAINTEST_HELPER") == "" {
		t.Skip("helper of TestOutDirKeptOnlyOnFailure, run in its child process")
	}
	fmt.Printf("outdir=%s\n", outDir(t, ""))
	t.Fail()
}

// TestChecksContextLeavesRoomForTeardown: the checks' context ends cleanupMargin before go
// test's deadline, and the margin holds a run's teardown (bounded at 2 minutes by the
// harness); it ended 30 s before the -timeout panic, which killed longer teardowns half-way.
func TestChecksContextLeavesRoomForTeardown(t *testing.T) {
	if cleanupMargin < 2*time.Minute {
		t.Errorf("cleanupMargin %v: a run's teardown may take 2 minutes", cleanupMargin)
	}
	dl := time.Now().Add(time.Hour)
	ctx, cancel := checksContext(dl, true)
	defer cancel()
	if got, ok := ctx.Deadline(); !ok || !got.Equal(dl.Add(-cleanupMargin)) {
		t.Errorf("checks' deadline %v (%v), want %v: cleanupMargin before the test's", got, ok, dl.Add(-cleanupMargin))
	}
	ctx2, cancel2 := checksContext(time.Time{}, false)
	defer cancel2()
	if _, ok := ctx2.Deadline(); ok {
		t.Error("without -timeout the checks got a deadline")
	}
}

// TestChecksContextEndsOnSignal: SIGTERM (or Ctrl-C) ends the checks' context, so the runs
// heal and tear down instead of the test binary dying with its containers.
func TestChecksContextEndsOnSignal(t *testing.T) {
	ctx, cancel := checksContext(time.Time{}, false)
	defer cancel()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not end the checks' context")
	}
}

type lines struct{ got []string }

func (l *lines) Log(args ...any) { l.got = append(l.got, fmt.Sprint(args...)) }

// TestStartedIDsAreLogged: each run and pool id is logged as it starts, with the command
// that removes it when go test is killed before it could clean up.
func TestStartedIDsAreLogged(t *testing.T) {
	var l lines
	p := &lineLogger{}
	p.attach(&l)
	started := logStarted(p)
	started("run", "20261128-075251-796ad9")
	started("pool", "20261128-075251-cef96b")
	if len(l.got) != 2 || !strings.Contains(l.got[0], "run 20261128-075251-796ad9") ||
		!strings.Contains(l.got[1], "splitbrain clean --run 20261128-075251-cef96b") {
		t.Errorf("logged %q, want the run and the pool id, each with its clean command", l.got)
	}
}

// fakeSplitbrain writes a shell script standing in for the splitbrain binary: the protocol
// handling of Assess against a child that misbehaves, with no Docker (not a chaos test).
func fakeSplitbrain(t *testing.T, script string) string {
	p := filepath.Join(t.TempDir(), "splitbrain")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestChildThatMisbehavesFails: a child that prints what is not an event and dies, or dies
// in the middle of a check, fails the test with what it printed; it never passes.
func TestChildThatMisbehavesFails(t *testing.T) {
	plan := `{"event":"plan","checks":[{"name":"handoff"},{"name":"kill-leader"}],"budget":600000000000}`
	ready := `{"event":"ready","budget":600000000000}`
	for _, tc := range []struct {
		name, script string
		want         []string
	}{
		{"garbage", "echo 'panic: not json'; echo 'goroutine 1 [running]' >&2; exit 2\n",
			[]string{"panic: not json", "goroutine 1 [running]", "exited (exit status 2)", "--- FAIL: TestHelperAssess"}},
		{"dies in a check", "echo '" + plan + "'; echo '" + ready + "'; read budget; read check; echo 'killed by the OOM killer' >&2; exit 137\n",
			[]string{"--- FAIL: TestHelperAssess/handoff", "--- FAIL: TestHelperAssess/kill-leader", "before its \"result\" event", "killed by the OOM killer"}},
		{"fatal engine", "echo '" + plan + "'; echo '{\"event\":\"fatal\",\"stage\":\"engine\",\"error\":\"no engine answers\"}'; exit 255\n",
			[]string{"no engine answers", "start a Docker engine", "--- FAIL: TestHelperAssess"}},
		{"wrong grade", "echo '" + plan + "'; echo '" + ready + "'; read budget; read check; echo '{\"event\":\"result\",\"graded\":{\"name\":\"handoff\",\"grade\":\"unsafe\",\"verdict\":\"invalid\",\"Runs\":[{\"check\":{\"name\":\"handoff\"},\"verdict\":\"invalid\",\"reasons\":[\"token-duplicate\"],\"explanation\":\"two leaders\",\"run_dir\":\"/x/run\"}]}}'; read check; echo '{\"event\":\"result\",\"graded\":{\"name\":\"kill-leader\",\"grade\":\"safe\",\"verdict\":\"valid\"}}'; read close; echo '{\"event\":\"scorecard\",\"scorecard\":{\"verdict\":\"invalid\",\"summary\":\"SUMMARY\"}}'\n",
			[]string{"--- FAIL: TestHelperAssess/handoff", "--- PASS: TestHelperAssess/kill-leader", "token-duplicate", "two leaders", "report: /x/run/report.html", "SUMMARY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAssess$", "-test.v")
			cmd.Env = append(os.Environ(), "SPLITBRAINTEST_HELPER=1", envBinary+"="+fakeSplitbrain(t, tc.script), EnvDir+"="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the helper test passed, want a failure:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the output does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestHelperAssess(t *testing.T) {
	if os.Getenv("SPLITBRAINTEST_HELPER") == "" {
		t.Skip("helper of TestChildThatMisbehavesFails, run in its child process")
	}
	Assess(t, Candidate{Store: "etcd", Recipe: "etcd-election"})
}

func TestSettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		opts []Option
		want string // "": valid
	}{
		{nil, ""},
		{[]Option{Budget(time.Minute), Checks("handoff", "kill-leader")}, ""},
		{[]Option{Budget(0)}, "want a positive duration"},
		{[]Option{Budget(-time.Second)}, "want a positive duration"},
		{[]Option{Checks("")}, `Checks("")`},
		{[]Option{Checks("handoff,kill-leader")}, "no comma"},
	} {
		var s settings
		for _, o := range tc.opts {
			o(&s)
		}
		err := s.validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", s, err, tc.want)
		}
	}
}
