//go:build chaos

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/assess"
)

// TestAssessFlagsTheBrokenGoExample runs `splitbrain assess` in-process on real etcd with the
// Go example's broken twin (its token is a per-process counter), on the check that catches
// it: handoff must grade it unsafe with token-duplicate on the unfenced run, and with no
// fenced rerun (no fence prevents a duplicate token); the exit code says invalid, the
// scorecard files hold one test case per check and link the run's report. A second
// invocation with the same --out resumes: it runs nothing and writes the same verdict.
// (That a passing check grades safe is TestGotestUserModule's correct child, through the
// same assess.Session.)
func TestAssessFlagsTheBrokenGoExample(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..")) // go test runs a package's tests in its directory
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "go-broken")
	// Stripped, as splitbraintest.BuildGo builds a user's candidate.
	build := exec.Command("go", "build", "-tags", "broken", "-trimpath", "-ldflags=-s -w", "-o", bin, "./examples/go")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags broken ./examples/go: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "assess")
	args := []string{"assess", "--store", "etcd", "--candidate-cmd", bin, "--checks", "handoff", "--budget", "10m", "--out", out}
	var stdout, stderr bytes.Buffer
	code := runMain(args, &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d (the twin is unsafe)", code, exitInvalid)
	}
	var sc assess.Scorecard
	b, err := os.ReadFile(filepath.Join(out, assess.ScorecardJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Checks) != 1 || sc.Checks[0].Name != "handoff" || sc.Checks[0].Grade != assess.GradeUnsafe {
		t.Errorf("checks %+v, want handoff graded unsafe (summary: %s)", sc.Checks, sc.Summary)
	}
	if len(sc.Results) != 1 {
		t.Errorf("%d runs, want 1 (a duplicate token gets no fenced rerun)", len(sc.Results))
	}
	for _, r := range sc.Results {
		if r.Reason != "token-duplicate" || r.Fenced {
			t.Errorf("%s (fenced %v): reason %q, want token-duplicate on the unfenced resource", r.Check.Key(), r.Fenced, r.Reason)
		}
		if _, err := os.Stat(filepath.Join(r.RunDir, "report.html")); err != nil {
			t.Errorf("%s: no report: %v", r.Check.Key(), err)
		}
	}
	junit, _ := os.ReadFile(filepath.Join(out, assess.ScorecardJUnit))
	if n := strings.Count(string(junit), "<testcase "); n != 1 || !strings.Contains(string(junit), `failures="1"`) {
		t.Errorf("junit.xml: %d test cases, want one failing (handoff):\n%s", n, junit)
	}
	page, _ := os.ReadFile(filepath.Join(out, assess.ScorecardHTML))
	if !strings.Contains(string(page), `href="runs/handoff/`) {
		t.Error("the scorecard does not link the handoff run's report")
	}

	stdout.Reset()
	stderr.Reset()
	if code := runMain(args, &stdout, &stderr); code != exitInvalid {
		t.Fatalf("resumed: exit %d, want %d\n%s%s", code, exitInvalid, stdout.String(), stderr.String())
	}
	if n := strings.Count(stdout.String(), "earlier"); n != 1 {
		t.Errorf("resumed: %d runs skipped, want the one:\n%s", n, stdout.String())
	}
}
