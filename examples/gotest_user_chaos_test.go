//go:build chaos

package examples

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
	"github.com/splitbrain-chaos/splitbrain/reports/runconfig"
)

// gotestUserCheck is the check TestGotestUserModule runs: the broken twin's token is a
// per-process term counter, which the first handoff shows (two leaders with token 1).
const gotestUserCheck = "handoff"

// TestGotestUserModule runs examples/gotest-user's own chaos test, as a user runs it in
// their repository (a module of its own, go.sum complete: -mod=readonly), on real etcd
// servers: with the correct candidate its check passes; with the broken twin it fails,
// naming the check, the reason and a report that exists. The module's test binary is built
// once (`go test -c`, the build `go test` makes) and run twice in parallel. The correct run
// has no SPLITBRAIN_BINARY, as in a user's shell: splitbraintest builds the splitbrain binary
// its checks run in from the module's splitbrain (here the clone, through the replace; with
// make build's packages in the build cache, a link).
func TestGotestUserModule(t *testing.T) {
	// A clone holds tracked files only: the module must not lean on anything else.
	if out, err := exec.Command("git", "ls-files", "--others", "gotest-user").Output(); err != nil {
		t.Fatalf("git ls-files: %v", err)
	} else if s := strings.TrimSpace(string(out)); s != "" {
		t.Fatalf("examples/gotest-user holds files a clone would not have (commit or remove them):\n%s", s)
	}
	env, testBin := buildGotestUser(t)
	for _, tc := range []struct {
		name, tags string
		pass       bool
	}{
		{"correct", "", true},
		{"broken", "broken", false},
	} {
		childEnv := slices.Clone(env)
		if tc.pass {
			childEnv = slices.DeleteFunc(childEnv, func(v string) bool { return strings.HasPrefix(v, "SPLITBRAIN_BINARY=") })
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			dir := t.TempDir()
			cmd := exec.CommandContext(ctx, testBin, "-test.count=1", "-test.v", "-test.short",
				"-test.run", "^TestElectionIsSafe$/^"+gotestUserCheck+"$", "-test.timeout", "7m")
			cmd.Dir = "gotest-user"
			// A copy: the two subtests run in parallel, and appending to the shared slice
			// let one overwrite the other's variables in spare capacity (the correct run
			// once ran the broken twin into the broken run's directory).
			cmd.Env = append(childEnv, "CANDIDATE_TAGS="+tc.tags, "SPLITBRAIN_SCORECARD_DIR="+dir, "TMPDIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			log := string(out)
			t.Logf("examples/gotest-user's test binary (CANDIDATE_TAGS=%q): %v\n%s", tc.tags, err, log)
			t.Cleanup(func() { assertRunsLeftNothing(t, filepath.Join(dir, "runs")) })
			if tc.pass {
				if err != nil || !strings.Contains(log, "--- PASS: TestElectionIsSafe/"+gotestUserCheck) {
					t.Fatalf("correct candidate: go test %v, want its %s check to pass:\n%s", err, gotestUserCheck, log)
				}
				if !strings.Contains(log, "building the splitbrain binary from") {
					t.Errorf("correct candidate: without SPLITBRAIN_BINARY, splitbraintest did not say it built the splitbrain binary:\n%s", log)
				}
				return
			}
			if err == nil {
				t.Fatalf("broken twin: go test passed, want its %s check to fail:\n%s", gotestUserCheck, log)
			}
			if !strings.Contains(log, "--- FAIL: TestElectionIsSafe/"+gotestUserCheck) {
				t.Fatalf("broken twin: want --- FAIL: TestElectionIsSafe/%s:\n%s", gotestUserCheck, log)
			}
			m := regexp.MustCompile(`report: (\S+report\.html)`).FindStringSubmatch(log)
			if m == nil {
				t.Fatalf("broken twin: the failure names no report:\n%s", log)
			}
			if _, err := os.Stat(m[1]); err != nil {
				t.Fatalf("broken twin: the named report is not there: %v", err)
			}
			// The run the failure points at shows the twin's bug: two leaders with one token.
			res, err := checkers.ReadResults(filepath.Join(filepath.Dir(m[1]), checkers.ResultsFile))
			if err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, r := range res.Reasons {
				codes = append(codes, r.Code)
			}
			if !slices.Contains(codes, "token-duplicate") {
				t.Errorf("broken twin: the reported run's reasons are %v, want token-duplicate", codes)
			}
		})
	}
}

// buildGotestUser builds examples/gotest-user's test binary as go test does, in its module
// (go.sum complete: -mod=readonly), and returns the environment to run it in.
func buildGotestUser(t *testing.T) (env []string, testBin string) {
	env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	testBin = filepath.Join(t.TempDir(), "gotest-user.test")
	build := exec.Command("go", "test", "-c", "-tags", "chaos", "-o", testBin, ".")
	build.Dir, build.Env = "gotest-user", env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c -tags chaos in examples/gotest-user: %v\n%s", err, out)
	}
	return env, testBin
}

// TestGotestUserModuleInterrupted: Ctrl-C of a user's go test while a check runs (SIGINT to
// the test binary, as the terminal sends it; the checks run in a splitbrain child in a
// process group of its own, which the test passes one cancel to) heals and tears the run
// down: the check fails, the test ends well before its -timeout, the scorecard is written,
// and no container or network of the run or its store cluster is left.
func TestGotestUserModuleInterrupted(t *testing.T) {
	r := signalGotestUser(t, os.Interrupt)
	if r.err == nil || !strings.Contains(r.log, "--- FAIL: TestElectionIsSafe/kill-leader") {
		t.Fatalf("interrupted: go test %v, want the kill-leader check to fail:\n%s", r.err, r.log)
	}
	if d := r.ended.Sub(r.sent); d > 3*time.Minute {
		t.Errorf("the test took %v after the interrupt, want its teardown only", d.Round(time.Second))
	}
	if _, err := os.Stat(filepath.Join(r.dir, "scorecard.json")); err != nil {
		t.Errorf("no scorecard after the interrupt: %v", err)
	}
	assertIDsLeftNothing(t, r.log)
}

// TestGotestUserModuleKilled: a user's go test killed outright mid-check (SIGKILL: the
// -timeout panic or an OOM kill does no better) cannot tear anything down; its splitbrain
// child sees its stdin end, cancels the check, tears the run and the store cluster down and
// exits on its own.
func TestGotestUserModuleKilled(t *testing.T) {
	r := signalGotestUser(t, os.Kill)
	// The child outlives the test binary: wait for it (found by its --out directory).
	deadline := time.Now().Add(3 * time.Minute)
	for drivenRunning(r.dir) {
		if time.Now().After(deadline) {
			t.Fatalf("splitbrain assess --driven --out %s still runs 3 minutes after its go test was killed", r.dir)
		}
		time.Sleep(time.Second)
	}
	t.Logf("the splitbrain child exited %v after the kill", time.Since(r.sent).Round(time.Second))
	if _, err := os.Stat(filepath.Join(r.dir, "scorecard.json")); err != nil {
		t.Errorf("the child wrote no scorecard after its parent was killed: %v", err)
	}
	assertIDsLeftNothing(t, r.log)
}

type signalled struct {
	log   string
	dir   string
	sent  time.Time
	ended time.Time
	err   error
}

// signalGotestUser runs examples/gotest-user's kill-leader check (the correct candidate) and
// sends sig to its test binary ten seconds after the check's run started.
func signalGotestUser(t *testing.T, sig os.Signal) signalled {
	env, testBin := buildGotestUser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	r := signalled{dir: t.TempDir()}
	t.Cleanup(func() { assertRunsLeftNothing(t, filepath.Join(r.dir, "runs")) })
	cmd := exec.CommandContext(ctx, testBin, "-test.count=1", "-test.v", "-test.short",
		"-test.run", "^TestElectionIsSafe$/^kill-leader$", "-test.timeout", "10m")
	cmd.Dir = "gotest-user"
	// The child's temporary directories go under this test's: a child killed mid-check never
	// removes its own (each held a 14 MB candidate build, one per make test, left in /tmp).
	cmd.Env = append(env, "SPLITBRAIN_SCORECARD_DIR="+r.dir, "TMPDIR="+t.TempDir())
	var out strings.Builder
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.Close(); waited <- err }()
	sent := make(chan time.Time, 1)
	armed := false
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if !armed && strings.Contains(sc.Text(), "splitbraintest: run ") && strings.Contains(sc.Text(), " started") {
			armed = true
			go func() { // the output is read on meanwhile: a blocked pipe would stall the test
				// Mid-check is when the kill has landed: the run's history says so. A fixed
				// 10 s after the run's start missed it once the event-paced check took 9 s.
				waitFaultStarted(filepath.Join(r.dir, "runs", "kill-leader"), 2*time.Minute)
				if err := cmd.Process.Signal(sig); err != nil {
					t.Error(err)
				}
				sent <- time.Now()
			}()
		}
	}
	r.err = <-waited
	if armed {
		r.sent = <-sent
	}
	r.ended = time.Now()
	r.log = out.String()
	t.Logf("examples/gotest-user's test binary, sent %v: %v\n%s", sig, r.err, r.log)
	if r.sent.IsZero() {
		t.Fatalf("no run started, nothing was signalled:\n%s", r.log)
	}
	return r
}

// waitFaultStarted returns once a history.jsonl under runs (a check's run directories)
// records a fault-start, or after limit: the check is then mid-run, in its faults phase.
func waitFaultStarted(runs string, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(runs, "*", "history.jsonl"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(`"kind":"fault-start"`)) {
				return
			}
		}
		// sleep: the history is a file the child appends to; nothing signals its writes here.
		time.Sleep(50 * time.Millisecond)
	}
}

// drivenRunning reports whether a process with "--driven" and dir on its command line runs.
func drivenRunning(dir string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if slices.Contains(args, "--driven") && slices.Contains(args, dir) {
			return true
		}
	}
	return false
}

// assertIDsLeftNothing checks every run and store cluster id the test logged as started: the
// store cluster has no run directory for assertRunsLeftNothing to find.
func assertIDsLeftNothing(t *testing.T, log string) {
	eng, err := platform.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, m := range regexp.MustCompile(`splitbraintest: (?:run|pool) (\S+) started`).FindAllStringSubmatch(log, -1) {
		platformtest.AssertNoLeftovers(t, eng, m[1])
	}
}

// assertRunsLeftNothing checks that every run under dir (the child go test's runs, found by
// their config.json) left no container or network behind.
func assertRunsLeftNothing(t *testing.T, dir string) {
	var ids []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == runconfig.FileName {
			if cfg, err := runconfig.Read(filepath.Dir(path)); err == nil {
				ids = append(ids, cfg.RunID)
			}
		}
		return nil
	})
	if len(ids) == 0 {
		return
	}
	eng, err := platform.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, id := range ids {
		platformtest.AssertNoLeftovers(t, eng, id)
	}
}
