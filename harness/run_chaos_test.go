//go:build chaos

package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/libraries"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	recipes "github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/boundtest"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
)

// Bounds the chaos tests state (on top of the recipe's own HandoffBound/FailoverBound,
// which docs/candidates.md documents): container restart and log pipeline latency on a
// loaded 2-core machine.
const (
	harnessSlack = 3 * time.Second
)

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// testStoreRoot keeps run directories for inspection when SPLITBRAIN_STORE_DIR is set (CI
// uploads it); otherwise they live in the test's temporary directory.
func testStoreRoot(t *testing.T) string {
	if root := os.Getenv(EnvStoreDir); root != "" {
		return filepath.Join(root, "chaos-tests", strings.ReplaceAll(t.Name(), "/", "_"))
	}
	return t.TempDir()
}

func baseConfig(t *testing.T, store, recipe string) Config {
	return Config{
		Store: store, Recipe: recipe, Nodes: 3,
		Warmup: 4 * time.Second, FaultTime: 8 * time.Second, Recovery: 4 * time.Second,
		StoreRoot: testStoreRoot(t), Progress: testWriter{t}, ProgressPeriod: 3 * time.Second, Seed: 1,
	}
}

// runCtx ends well before the test binary's own deadline so the run can heal and tear down.
func runCtx(t *testing.T) context.Context {
	ctx := t.Context()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-3*time.Minute))
		t.Cleanup(cancel)
	}
	return ctx
}

// runAndRead runs cfg and returns the outcome and the recorded history; it asserts the run
// left nothing behind in Docker.
func runAndRead(t *testing.T, ctx context.Context, cfg Config) (*Outcome, []history.Event) {
	t.Helper()
	out, err := Run(ctx, cfg)
	if out != nil {
		assertNoLeftovers(t, out.RunID)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	evs, _, err := history.ReadFile(filepath.Join(out.RunDir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run dir %s: verdict %s %v, counts %+v", out.RunDir, out.Verdict, out.Reasons, out.Counts)
	return out, evs
}

func assertNoLeftovers(t *testing.T, runID string) {
	t.Helper()
	if runID == "" {
		t.Fatal("no run id")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	platformtest.AssertNoLeftovers(t, platformtest.Connect(t, ctx), runID)
}

// resourceBlocks checks the resource's record: accepted writes of one tenure (node, token)
// must form one contiguous block. A tenure accepted again after another tenure's write was
// accepted is interleaving. It returns the number of accepted writes and the problems.
func resourceBlocks(evs []history.Event) (accepted int, problems []string) {
	type tenure struct {
		node  string
		token int64
	}
	closed := map[tenure]bool{}
	var cur tenure
	for _, e := range evs {
		if e.Kind != history.KindDecision || e.Result != history.ResultAccepted {
			continue
		}
		accepted++
		tn := tenure{e.Node, e.Token}
		if tn == cur {
			continue
		}
		if closed[tn] {
			problems = append(problems, fmt.Sprintf("seq %d: %s token %d accepted again after %s token %d", e.Seq, tn.node, tn.token, cur.node, cur.token))
		}
		if cur.node != "" {
			closed[cur] = true
		}
		cur = tn
	}
	return accepted, problems
}

// nextElection is the first elected event after t (optionally not by node), or nil.
func nextElection(evs []history.Event, after int64, notNode string) *history.Event {
	var best *history.Event
	for i := range evs {
		e := &evs[i]
		if e.Kind == history.KindElected && e.T > after && e.Node != notNode && (best == nil || e.T < best.T) {
			best = e
		}
	}
	return best
}

func countKind(evs []history.Event, k history.Kind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func phases(evs []history.Event) string {
	var ps []string
	for _, e := range evs {
		if e.Kind == history.KindPhase {
			ps = append(ps, e.Phase)
		}
	}
	return strings.Join(ps, ",")
}

// TestRunNoFaults: every recipe elects a leader whose writes the resource accepts, with no
// interleaving in the resource's record, and the lifecycle goes through every phase. A
// recipe with a fault-free smoke row in the matrix is left to that row.
func TestRunNoFaults(t *testing.T) {
	rows := smokeRowsFor(t, "none", false)
	for _, spec := range candidates.Registry.Infos() {
		if _, lib := libraries.Lookup(spec.Name); lib {
			continue // a library run as shipped is judged by its matrix rows, not required to pass
		}
		if row, ok := rows[spec.Name]; ok {
			t.Logf("%s: covered by the matrix's smoke row %s", spec.Name, row)
			continue
		}
		t.Run(spec.Name, func(t *testing.T) {
			// Nothing here is timed: recipes run side by side, -parallel at a time.
			t.Parallel()
			cfg := baseConfig(t, spec.Store, spec.Name)
			if testing.Short() {
				cfg.FaultTime, cfg.Recovery = 4*time.Second, 3*time.Second // no faults to outlast
			}
			out, evs := runAndRead(t, runCtx(t), cfg)
			if got := phases(evs); got != "setup,warmup,faults,heal,recovery,teardown" {
				t.Errorf("phases %s", got)
			}
			if countKind(evs, history.KindProcessStart) < 3 || countKind(evs, history.KindProcessExit) < 3 {
				t.Errorf("process starts/exits not recorded for all candidates")
			}
			if countKind(evs, history.KindElected) == 0 {
				t.Fatal("no candidate was elected")
			}
			accepted, problems := resourceBlocks(evs)
			if spec.Negative {
				return // negative controls only have to run and produce events here
			}
			if accepted < 10 {
				t.Errorf("only %d writes accepted", accepted)
			}
			if len(problems) > 0 {
				t.Errorf("interleaving at the resource: %v", problems)
			}
			if out.Counts.ContractViolations > 0 {
				t.Errorf("%d contract violations", out.Counts.ContractViolations)
			}
			if out.Verdict != VerdictValid {
				t.Errorf("verdict %s without faults: %v", out.Verdict, out.Reasons)
			}
		})
	}
}

// positiveRecipes are the recipes expected to be safe. Under -short (the CI smoke subset)
// only one watch-based (etcd) and one poll-based (redis) recipe get the failover tests; the
// candidates package tests every recipe's failover in-process.
func positiveRecipes() []recipes.Definition {
	var out []recipes.Definition
	for _, d := range candidates.Registry {
		s := d.Describe()
		if _, lib := libraries.Lookup(s.Name); s.Negative || lib {
			continue
		}
		if testing.Short() && s.Name != "etcd-election" && s.Name != "redis-setnx" {
			continue
		}
		out = append(out, d)
	}
	return out
}

// TestRunHandoff: SIGTERM of the leader (handoff workload) yields another leader within the
// recipe's HandoffBound + harnessSlack. A recipe with a bounded fault-free handoff smoke row
// in the matrix is left to that row.
func TestRunHandoff(t *testing.T) {
	rows := smokeRowsWith(t, "none", "handoff", true)
	for _, def := range positiveRecipes() {
		spec := def.Describe()
		if row, ok := rows[spec.Name]; ok {
			t.Logf("%s: covered by the matrix's smoke row %s", spec.Name, row)
			continue
		}
		t.Run(spec.Name, func(t *testing.T) {
			cfg := baseConfig(t, spec.Store, spec.Name)
			cfg.Workload, cfg.HandoffEvery, cfg.HandoffPause = "handoff", 4*time.Second, time.Second
			cfg.FaultTime = 10 * time.Second // handoffs at +4s and +8s
			out, evs := runAndRead(t, runCtx(t), cfg)
			if out.Verdict != VerdictValid {
				t.Errorf("verdict %s: %v", out.Verdict, out.Reasons)
			}
			timing := def.TimingFor(contract.Config{LeaseTTL: DefaultTTL, WriteInterval: DefaultWriteInterval})
			bound := timing.HandoffBound + harnessSlack
			var handoffs int
			for _, e := range evs {
				if e.Kind != history.KindSignal || e.Reason != "handoff" || e.Signal != "SIGTERM" {
					continue
				}
				handoffs++
				next := nextElection(evs, e.T, e.Node)
				if next == nil {
					t.Errorf("no new leader after SIGTERM of %s", e.Node)
					continue
				}
				took := time.Duration(next.T - e.T)
				t.Logf("handoff %s → %s in %v (bound %v)", e.Node, next.Node, took, bound)
				boundtest.Check(t, "handoff from "+e.Node, took, bound)
				checkRestartAfterExit(t, evs, e, cfg.HandoffPause)
			}
			if handoffs == 0 {
				t.Fatal("no handoff happened")
			}
			if _, problems := resourceBlocks(evs); len(problems) > 0 {
				t.Errorf("interleaving at the resource: %v", problems)
			}
		})
	}
}

// checkRestartAfterExit: the handoff restarts the node its pause after the exit, which the
// engine's die event reports at once (process-start is recorded before the start call); a
// WaitExit that missed the event would find the exit only at its 2 s safety poll
// (procSafetyPoll), up to a second more than the bound allows.
func checkRestartAfterExit(t *testing.T, evs []history.Event, sig history.Event, pause time.Duration) {
	t.Helper()
	var exitT int64
	for _, e := range evs {
		if e.T < sig.T || e.Node != sig.Node {
			continue
		}
		switch {
		case e.Kind == history.KindProcessExit && exitT == 0:
			exitT = e.T
		case e.Kind == history.KindProcessStart && exitT != 0:
			gap := time.Duration(e.T - exitT)
			t.Logf("%s restarted %v after its exit (pause %v)", sig.Node, gap, pause)
			boundtest.Check(t, "restart after the handoff's exit of "+sig.Node, gap, pause+time.Second)
			return
		}
	}
	if exitT == 0 {
		t.Errorf("no process-exit of %s after its handoff SIGTERM", sig.Node)
	}
}

// TestRunKillLeader: SIGKILL of the leader (nemesis kill, platform Kill) yields another
// leader within the recipe's FailoverBound (TTL + its detection) + harnessSlack. A recipe
// with a bounded kill-leader smoke row in the matrix is left to that row.
func TestRunKillLeader(t *testing.T) {
	rows := smokeRowsFor(t, "kill-leader", true)
	for _, def := range positiveRecipes() {
		spec := def.Describe()
		if row, ok := rows[spec.Name]; ok {
			t.Logf("%s: covered by the matrix's smoke row %s", spec.Name, row)
			continue
		}
		t.Run(spec.Name, func(t *testing.T) {
			cfg := baseConfig(t, spec.Store, spec.Name)
			// On the leader's 3rd write, and the phase ends once the kill healed and a leader
			// wrote again: the next election is then in the history however slow the machine
			// (a fixed 10 s phase missed consul-lock's 8.5 s failover at load 20).
			cfg.Nemesis = "kill:target=leader,on=write:3,for=3s,count=1"
			cfg.Until, cfg.FaultTime = "faults", time.Minute
			out, evs := runAndRead(t, runCtx(t), cfg)
			timing := def.TimingFor(contract.Config{LeaseTTL: DefaultTTL, WriteInterval: DefaultWriteInterval})
			bound := timing.FailoverBound + harnessSlack
			var kills int
			for _, e := range evs {
				if e.Kind != history.KindFaultStart || e.Fault != "kill" {
					continue
				}
				if e.Err != "" || len(e.Targets) != 1 {
					t.Fatalf("kill did not apply: %+v", e)
				}
				kills++
				next := nextElection(evs, e.T, e.Targets[0])
				if next == nil {
					t.Fatalf("no new leader after killing %s", e.Targets[0])
				}
				took := time.Duration(next.T - e.T)
				t.Logf("kill -9 %s → %s elected in %v (bound %v)", e.Targets[0], next.Node, took, bound)
				boundtest.Check(t, "failover", took, bound)
			}
			if kills != 1 {
				t.Fatalf("%d kills, want 1", kills)
			}
			var exit137 bool
			for _, e := range evs {
				if e.Kind == history.KindProcessExit && e.Exit != nil && *e.Exit == 137 {
					exit137 = true
				}
			}
			if !exit137 {
				t.Error("the killed candidate's exit (137) was not recorded")
			}
			if out.HealError != "" {
				t.Errorf("heal failed: %s", out.HealError)
			}
			// "unknown" is no pass: the kill's fault-start is stamped once the process is dead,
			// so every write the leader sent lies inside its tenure.
			if out.Verdict != VerdictValid {
				t.Errorf("verdict %s, want valid: %v", out.Verdict, out.Reasons)
			}
		})
	}
}

// buildExternal compiles testdata/external-candidate into a static executable.
func buildExternal(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..") // go test runs a package's tests in its directory
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "testdata", "external-candidate")
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("testdata/external-candidate missing: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "external-candidate")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build external candidate: %v\n%s", err, out)
	}
	return bin
}

// TestRunExternalCandidate: a user executable that speaks the contract runs via
// --candidate-cmd and is seen electing and writing.
func TestRunExternalCandidate(t *testing.T) {
	t.Parallel() // nothing timed; runs beside the other untimed top-level tests
	bin := buildExternal(t)
	cfg := baseConfig(t, "etcd", "")
	cfg.CandidateCmd = bin
	out, evs := runAndRead(t, runCtx(t), cfg)
	// The lifecycle of a fault-free run (the recipes' own fault-free runs are matrix rows).
	if got := phases(evs); got != "setup,warmup,faults,heal,recovery,teardown" {
		t.Errorf("phases %s", got)
	}
	if countKind(evs, history.KindProcessStart) < 3 || countKind(evs, history.KindProcessExit) < 3 {
		t.Errorf("process starts/exits not recorded for all candidates")
	}
	if countKind(evs, history.KindElected) == 0 {
		t.Fatal("external candidate never elected")
	}
	accepted, problems := resourceBlocks(evs)
	if accepted == 0 {
		t.Fatal("no write of the external candidate accepted")
	}
	if len(problems) > 0 {
		t.Errorf("interleaving: %v", problems)
	}
	if out.Verdict != VerdictValid {
		t.Errorf("verdict %s without faults: %v", out.Verdict, out.Reasons)
	}
	if !strings.Contains(out.RunDir, "cmd-external-candidate") {
		t.Errorf("run dir %s does not name the command", out.RunDir)
	}
	assertCmdDirGone(t, out.RunDir)
}

// assertCmdDirGone: the executable the candidates mounted is removed with the run.
func assertCmdDirGone(t *testing.T, runDir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(runDir, cmdDirName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the candidate executable's directory is still in %s after the run: %v", runDir, err)
	}
}

// TestRunBrokenCandidate: a candidate command that exits at once stops the run with an
// error carrying its log, and nothing remains.
func TestRunBrokenCandidate(t *testing.T) {
	script := filepath.Join(t.TempDir(), "broken")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'broken candidate: cannot start' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t, "redis", "")
	cfg.CandidateCmd = script
	out, err := Run(runCtx(t), cfg)
	if err == nil {
		t.Fatal("a candidate that exits at once did not fail the run")
	}
	if !strings.Contains(err.Error(), "every candidate exited") || !strings.Contains(err.Error(), "cannot start") {
		t.Errorf("error lacks the cause or the log tail: %v", err)
	}
	if out == nil {
		t.Fatal("no outcome")
	}
	assertNoLeftovers(t, out.RunID)
	assertCmdDirGone(t, out.RunDir)
	if out.Verdict == VerdictValid {
		t.Error("failed run reported valid")
	}
}

// TestRunCancelled: cancelling the context mid-run (what SIGINT does) heals, tears down and
// leaves nothing; the history ends with teardown and run-end.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(runCtx(t))
	defer cancel()
	cfg := baseConfig(t, "redis", "redis-setnx")
	cfg.StoreRoot = t.TempDir() // the watcher below globs it
	cfg.FaultTime = time.Minute
	cfg.Nemesis = "pause:target=leader,at=0s,for=30s,count=1"
	// Cancel once the pause is applied: in the middle of an active fault. Setup alone can
	// take minutes on a loaded machine, so the watcher waits long; promptness is measured
	// from the cancel.
	cancelled := make(chan time.Time, 1)
	runDone := make(chan struct{})
	go func() {
		defer func() { cancelled <- time.Now(); cancel() }()
		deadline := time.Now().Add(6 * time.Minute)
		for time.Now().Before(deadline) {
			dirs, _ := filepath.Glob(filepath.Join(cfg.StoreRoot, "*", "*", HistoryFile))
			for _, d := range dirs {
				if b, _ := os.ReadFile(d); strings.Contains(string(b), `"fault-start"`) {
					return
				}
			}
			select {
			case <-runDone:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	out, err := Run(ctx, cfg)
	close(runDone)
	if err == nil {
		t.Fatal("cancelled run returned no error")
	}
	if took := time.Since(<-cancelled); took > 90*time.Second {
		t.Errorf("cancelled run took %v after the cancel", took)
	}
	assertNoLeftovers(t, out.RunID)
	evs, _, rerr := history.ReadFile(filepath.Join(out.RunDir, HistoryFile))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if countKind(evs, history.KindFaultStart) == 0 {
		t.Fatal("cancelled before the fault started")
	}
	if countKind(evs, history.KindFaultEnd) == 0 {
		t.Error("the active pause was not healed (no fault-end)")
	}
	last := evs[len(evs)-1]
	if last.Kind != history.KindRunEnd || !strings.Contains(last.Reason, "cancel") {
		t.Errorf("last event %+v, want run-end with a cancel reason", last)
	}
	if !strings.HasSuffix(phases(evs), "heal,teardown") {
		t.Errorf("phases %s", phases(evs))
	}
	// The verdict is a function of the run directory: `splitbrain check` says what run said.
	stored, err := checkers.ReadResults(filepath.Join(out.RunDir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	p, err := checkers.LoadParams(out.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := checkers.CheckDir(context.Background(), out.RunDir, p)
	if err != nil {
		t.Fatal(err)
	}
	if d := checkers.Disagreements(stored, again); len(d) > 0 || string(again.Verdict) != out.Verdict {
		t.Errorf("check disagrees with run (run said %s): %v", out.Verdict, d)
	}
	if out.Verdict != VerdictUnknown && out.Verdict != VerdictInvalid {
		t.Errorf("cancelled run verdict %s", out.Verdict)
	}
	if !slices.ContainsFunc(again.Reasons, func(r checkers.Reason) bool { return r.Code == "run-incomplete" }) {
		t.Errorf("no run-incomplete reason: %+v", again.Reasons)
	}
}

// TestRunSetupErrorAndPanic: an error in the middle of setup, and a panic, both leave nothing.
func TestRunSetupErrorAndPanic(t *testing.T) {
	t.Run("error", func(t *testing.T) {
		testHookAfterStore = func() error { return fmt.Errorf("injected setup failure") }
		defer func() { testHookAfterStore = nil }()
		out, err := Run(runCtx(t), baseConfig(t, "redis", "redis-setnx"))
		if err == nil || !strings.Contains(err.Error(), "injected setup failure") {
			t.Fatalf("error %v", err)
		}
		assertNoLeftovers(t, out.RunID)
	})
	t.Run("panic", func(t *testing.T) {
		testHookAfterStore = func() error { panic("injected panic") }
		defer func() { testHookAfterStore = nil }()
		cfg := baseConfig(t, "redis", "redis-setnx")
		cfg.StoreRoot = t.TempDir() // exactly this run's directory is looked up below
		var p any
		func() {
			defer func() { p = recover() }()
			Run(runCtx(t), cfg)
		}()
		if p != "injected panic" {
			t.Fatalf("recovered %v, want the injected panic re-raised", p)
		}
		cfgFiles, _ := filepath.Glob(filepath.Join(cfg.StoreRoot, "*", "2*", ConfigFile)) // not via "latest"
		if len(cfgFiles) != 1 {
			t.Fatalf("config files %v", cfgFiles)
		}
		rc, err := ReadRunConfig(filepath.Dir(cfgFiles[0]))
		if err != nil {
			t.Fatal(err)
		}
		assertNoLeftovers(t, rc.RunID)
		evs, _, err := history.ReadFile(filepath.Join(filepath.Dir(cfgFiles[0]), HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		if last := evs[len(evs)-1]; last.Kind != history.KindRunEnd || !strings.Contains(last.Reason, "panic") {
			t.Errorf("last event %+v", last)
		}
	})
}

// TestRunSIGINT: SIGINT to a real `splitbrain run` process heals, tears down and exits.
func TestRunSIGINT(t *testing.T) {
	// make test has just built the binary and names it (the candidate image copies it too);
	// linking a second copy cost this test a minute of both cores.
	bin := os.Getenv(images.EnvBinary)
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "splitbrain")
		build := exec.Command("go", "build", "-o", bin, "./cmd/splitbrain")
		build.Dir = ".." // go test runs a package's tests in its directory
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	storeDir := t.TempDir()
	cmd := exec.Command(bin, "run", "--store", "redis", "--recipe", "redis-setnx", "--time", "2m",
		"--warmup", "2s", "--nemesis", "pause:target=leader,at=1s,for=1m,count=1", "--out", storeDir, "--progress", "2s")
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var dir string
	deadline := time.Now().Add(3 * time.Minute)
	for dir == "" && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		hs, _ := filepath.Glob(filepath.Join(storeDir, "*", "*", HistoryFile))
		for _, h := range hs {
			if b, _ := os.ReadFile(h); strings.Contains(string(b), `"fault-start"`) {
				dir = filepath.Dir(h)
			}
		}
	}
	if dir == "" {
		cmd.Process.Kill()
		t.Fatalf("the run never reached its fault:\n%s", output.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 255 {
			t.Errorf("exit %v, want 255 (interrupted)", err)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("splitbrain run did not exit after SIGINT:\n%s", output.String())
	}
	t.Logf("output:\n%s", output.String())
	rc, err := ReadRunConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, rc.RunID)
	evs, _, err := history.ReadFile(filepath.Join(dir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if countKind(evs, history.KindFaultEnd) == 0 {
		t.Error("the pause was not healed")
	}
	if evs[len(evs)-1].Kind != history.KindRunEnd {
		t.Errorf("history does not end with run-end: %+v", evs[len(evs)-1])
	}
}
