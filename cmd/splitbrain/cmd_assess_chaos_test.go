//go:build chaos

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/assess"
)

// TestAssessFlagsTheBrokenGoExample runs `splitbrain assess` in-process, two checks on real
// etcd, on the Go example's broken twin (its token is a per-process counter): fault-free must
// come out safe, and the handoff check must catch the twin with token-duplicate (which no
// fence prevents, so there is no fenced rerun); the exit code says invalid, the scorecard files hold one test case per check
// and link every run's report. A second invocation with the same --out resumes: it runs
// nothing and writes the same verdict.
func TestAssessFlagsTheBrokenGoExample(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir := t.TempDir()
	bin := filepath.Join(dir, "go-broken")
	build := exec.Command("go", "build", "-tags", "broken", "-o", bin, "./examples/go")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags broken ./examples/go: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "assess")
	args := []string{"assess", "--store", "etcd", "--candidate-cmd", bin, "--checks", "fault-free,handoff", "--budget", "10m", "--out", out}
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
	grades := map[string]string{}
	for _, c := range sc.Checks {
		grades[c.Name] = c.Grade
	}
	if grades["fault-free"] != assess.GradeSafe || grades["handoff"] != assess.GradeUnsafe {
		t.Errorf("grades %v, want fault-free safe and handoff unsafe (summary: %s)", grades, sc.Summary)
	}
	for _, r := range sc.Results {
		if r.Check.Name == "handoff" && (r.Reason != "token-duplicate" || r.Fenced) {
			t.Errorf("handoff (fenced %v): reason %q, want token-duplicate on the unfenced resource", r.Fenced, r.Reason)
		}
		if _, err := os.Stat(filepath.Join(r.RunDir, "report.html")); err != nil {
			t.Errorf("%s: no report: %v", r.Check.Key(), err)
		}
	}
	if len(sc.Results) != 2 {
		t.Errorf("%d runs, want 2 (fault-free, handoff; a duplicate token gets no fenced rerun)", len(sc.Results))
	}
	junit, _ := os.ReadFile(filepath.Join(out, assess.ScorecardJUnit))
	if n := strings.Count(string(junit), "<testcase "); n != 2 {
		t.Errorf("junit.xml: %d test cases, want one per check (2)", n)
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
	if n := strings.Count(stdout.String(), "earlier"); n != 2 {
		t.Errorf("resumed: %d runs skipped, want both:\n%s", n, stdout.String())
	}
}
