package assess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/explore"
	"github.com/splitbrain-chaos/splitbrain/harness"
)

// TestSessionRecordsChecksItCannotRunAsNotRun: a check the budget has no room for, or one
// given after the context ended, is graded not-run (unknown on the scorecard), never dropped.
func TestSessionRecordsChecksItCannotRunAsNotRun(t *testing.T) {
	dir := t.TempDir()
	s, checks, err := NewSession(Options{Store: "etcd", Recipe: "etcd-election", OutDir: dir, Checks: []string{"kill-leader", "pause-leader"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 2 {
		t.Fatalf("planned %d checks, want 2", len(checks))
	}
	s.SetBudget(time.Second) // less than any check's estimate
	g, err := s.Check(context.Background(), checks[0])
	if err != nil {
		t.Fatal(err)
	}
	if g.Grade != GradeNotRun || g.Verdict != harness.VerdictUnknown || len(g.Runs) != 1 || !strings.Contains(g.Runs[0].NotRun, "budget") {
		t.Errorf("over budget: got %+v, want grade not-run, verdict unknown, one run not run for the budget", g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.SetBudget(time.Hour)
	if g, _ := s.Check(ctx, checks[1]); g.Grade != GradeNotRun || g.Runs[0].NotRun != "interrupted" {
		t.Errorf("after the context ended: got %+v, want not run (interrupted)", g)
	}
	sc, err := s.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sc.Invocations != 1 || sc.Total != sc.Elapsed {
		t.Errorf("scorecard: %d invocations, total %v, elapsed %v: want one invocation, total = elapsed", sc.Invocations, sc.Total, sc.Elapsed)
	}
	if sc.Verdict != harness.VerdictUnknown || !strings.Contains(sc.Summary, "2 not run") {
		t.Errorf("scorecard verdict %s, summary %q: want unknown, 2 not run", sc.Verdict, sc.Summary)
	}
	for _, f := range []string{ScorecardHTML, ScorecardJSON, ScorecardJUnit} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("scorecard file: %v", err)
		}
	}
}

// fakeRuns stands in for the harness in the loop tests: each check's unfenced and fenced
// outcome by key, each run taking wall (counted, not slept: the budget rule reads Wall).
type fakeRuns struct {
	out  map[string]CheckResult
	wall time.Duration
	// outDir, when set, gets a run directory per run with its results.json, as the harness
	// writes one: a resumed assessment trusts a result only with it.
	outDir string
	mu     sync.Mutex
	ran    []string
}

func (f *fakeRuns) run(_ context.Context, c Check, _ time.Duration) (CheckResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ran = append(f.ran, c.Key())
	r, ok := f.out[c.Key()]
	if !ok {
		r = CheckResult{Verdict: harness.VerdictValid}
	}
	r.Check, r.Fenced, r.Wall = c, c.Resource == ResourceFenced, f.wall
	if f.outDir != "" {
		dir, err := writeRunDir(f.outDir, c.Key(), len(f.ran), r.Verdict, r.Reasons...)
		if err != nil {
			return r, err
		}
		r.RunDir = dir
	}
	return r, nil
}

// writeRunDir writes OUT/runs/<key>/r<n>/results.json with verdict and reasons (severity
// invalid) and returns the directory.
func writeRunDir(outDir, key string, n int, verdict string, reasons ...string) (string, error) {
	dir := filepath.Join(outDir, RunsDir, strings.ReplaceAll(key, "/", "--"), fmt.Sprintf("r%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, writeResults(dir, verdict, reasons...)
}

// writeResults writes dir/results.json with verdict and reasons (severity invalid).
func writeResults(dir, verdict string, reasons ...string) error {
	res := checkers.Results{Schema: checkers.SchemaVersion, Verdict: checkers.Verdict(verdict)}
	for _, code := range reasons {
		res.Reasons = append(res.Reasons, checkers.Reason{Code: code, Severity: checkers.SevInvalid})
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, checkers.ResultsFile), b, 0o644)
}

// Run is the Session loop with a resume state: a violation no fence prevents (a duplicate
// token, a zombie leader) gets no fenced rerun, a stale write does; a second invocation
// runs nothing again.
func TestRunGivesAFencedRerunOnlyWhereAFenceCanHelp(t *testing.T) {
	f := &fakeRuns{wall: time.Second, out: map[string]CheckResult{
		"handoff":       {Verdict: harness.VerdictInvalid, Reasons: []string{"token-duplicate"}, Reason: "token-duplicate", Unfenceable: []string{"token-duplicate"}},
		"pause-leader":  {Verdict: harness.VerdictInvalid, Reasons: []string{"stale-write-accepted"}, Reason: "stale-write-accepted"},
		"freeze-leader": {Verdict: harness.VerdictInvalid, Reasons: []string{ReasonZombie}, Reason: ReasonZombie, Unfenceable: []string{ReasonZombie}},
	}}
	opts := Options{Store: "etcd", Recipe: "etcd-election", OutDir: t.TempDir(), Checks: []string{"kill-leader", "freeze-leader", "pause-leader", "handoff"}}
	f.outDir = opts.OutDir
	sc, err := runWith(context.Background(), opts, f.run)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"handoff", "pause-leader", "pause-leader/fenced", "kill-leader", "freeze-leader"}; !slices.Equal(f.ran, want) {
		t.Errorf("ran %v, want %v (battery order; a fenced rerun only for the stale write)", f.ran, want)
	}
	grades := map[string]string{}
	for _, g := range sc.Checks {
		grades[g.Name] = g.Grade
	}
	if grades["handoff"] != GradeUnsafe || grades["freeze-leader"] != GradeUnsafe || grades["pause-leader"] != GradeFenceSaves || grades["kill-leader"] != GradeSafe {
		t.Errorf("grades %v", grades)
	}
	if sc.Verdict != harness.VerdictInvalid || !strings.Contains(sc.Summary, "freeze-leader ("+ReasonZombie+")") {
		t.Errorf("verdict %s, summary %q: want invalid, the zombie named", sc.Verdict, sc.Summary)
	}
	f.ran = nil
	again, err := runWith(context.Background(), opts, f.run)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 0 || again.Verdict != sc.Verdict || again.Invocations != 2 {
		t.Errorf("resumed: ran %v, verdict %s, %d invocations: want nothing run, the same verdict, 2 invocations", f.ran, again.Verdict, again.Invocations)
	}
}

// A fenced rerun the rest of the budget cannot hold is not run and says so: the check is
// unsafe unfenced with the fence's help unknown, never a pass; later checks are not run.
func TestRunRecordsAFencedRerunTheBudgetCannotHold(t *testing.T) {
	f := &fakeRuns{wall: time.Hour, out: map[string]CheckResult{
		"pause-leader": {Verdict: harness.VerdictInvalid, Reasons: []string{"stale-write-accepted"}, Reason: "stale-write-accepted"},
	}}
	opts := Options{Store: "etcd", Recipe: "etcd-election", OutDir: t.TempDir(), Budget: 10 * time.Minute, Checks: []string{"pause-leader", "kill-leader"}}
	sc, err := runWith(context.Background(), opts, f.run)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.ran, []string{"pause-leader"}) {
		t.Errorf("ran %v, want only pause-leader (a run took an hour of a 10-minute budget)", f.ran)
	}
	if sc.Verdict != harness.VerdictUnknown || !strings.Contains(sc.Summary, "pause-leader (fenced rerun not run: budget") || !strings.Contains(sc.Summary, "1 not run (kill-leader)") {
		t.Errorf("verdict %s, summary %q: want unknown, the rerun and kill-leader not run for the budget", sc.Verdict, sc.Summary)
	}
	junit, _ := os.ReadFile(filepath.Join(opts.OutDir, ScorecardJUnit))
	if !strings.Contains(string(junit), "fenced rerun not run: budget") {
		t.Errorf("junit.xml does not say the fenced rerun did not run:\n%s", junit)
	}
}

// The estimate of the next check is the slowest run but the first (which also started the
// store cluster): a check starts only when even a slow one fits.
func TestSessionEstimate(t *testing.T) {
	s := &Session{}
	if got := s.estimate(); got != firstEstimate {
		t.Errorf("before any run: %v, want %v", got, firstEstimate)
	}
	s.spent = []time.Duration{100 * time.Second}
	if got := s.estimate(); got != 100*time.Second {
		t.Errorf("after one run: %v, want it", got)
	}
	s.spent = append(s.spent, 30*time.Second, 50*time.Second, 40*time.Second)
	if got := s.estimate(); got != 50*time.Second {
		t.Errorf("after four runs: %v, want the slowest but the first, 50s", got)
	}
}

// With checks at once, the first Parallel runs each started a store cluster: the estimate
// leaves them out once later runs exist.
func TestSessionEstimateWithChecksAtOnce(t *testing.T) {
	s := &Session{opts: Options{Parallel: 2}}
	s.spent = []time.Duration{90 * time.Second, 100 * time.Second}
	if got := s.estimate(); got != 100*time.Second {
		t.Errorf("after the first two runs: %v, want the slower, 100s", got)
	}
	s.spent = append(s.spent, 30*time.Second, 50*time.Second)
	if got := s.estimate(); got != 50*time.Second {
		t.Errorf("after four runs: %v, want the slowest but the first two, 50s", got)
	}
}

// With Parallel 2 two checks run at once (the first does not end before the second started),
// and the scorecard, the JUnit file and the resume state still list them in battery order,
// each unfenced run before its fenced rerun, although the first finished last.
func TestRunChecksAtOnceKeepsBatteryOrder(t *testing.T) {
	f := &fakeRuns{wall: time.Second, out: map[string]CheckResult{
		"handoff": {Verdict: harness.VerdictInvalid, Reasons: []string{"stale-write-accepted"}, Reason: "stale-write-accepted"},
	}}
	secondStarted := make(chan struct{})
	var once sync.Once
	run := func(ctx context.Context, c Check, budget time.Duration) (CheckResult, error) {
		switch c.Key() {
		case "pause-leader":
			once.Do(func() { close(secondStarted) })
		case "handoff":
			select {
			case <-secondStarted:
			case <-time.After(time.Minute): // a deadlock detector, not a timing bound
				t.Error("pause-leader did not start while handoff ran: the checks did not run at once")
			}
		}
		return f.run(ctx, c, budget)
	}
	opts := Options{Store: "etcd", Recipe: "etcd-election", OutDir: t.TempDir(), Parallel: 2,
		Checks: []string{"handoff", "pause-leader", "kill-leader", "fault-free"}}
	f.outDir = opts.OutDir
	sc, err := runWith(context.Background(), opts, run)
	if err != nil {
		t.Fatal(err)
	}
	if f.ran[0] != "pause-leader" {
		t.Errorf("ran %v: want pause-leader to finish first (handoff waited for it)", f.ran)
	}
	var keys []string
	for _, r := range sc.Results {
		keys = append(keys, r.Check.Key())
	}
	want := []string{"handoff", "handoff/fenced", "pause-leader", "kill-leader", "fault-free"}
	if !slices.Equal(keys, want) {
		t.Errorf("scorecard runs %v, want %v", keys, want)
	}
	var names []string
	for _, g := range sc.Checks {
		names = append(names, g.Name)
	}
	if !slices.Equal(names, []string{"handoff", "pause-leader", "kill-leader", "fault-free"}) {
		t.Errorf("scorecard checks %v, want battery order", names)
	}
	junit, err := os.ReadFile(filepath.Join(opts.OutDir, ScorecardJUnit))
	if err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(string(junit), `name="handoff"`), strings.Index(string(junit), `name="fault-free"`); i < 0 || j < 0 || i > j {
		t.Errorf("junit.xml does not list handoff before fault-free:\n%s", junit)
	}
	st, err := loadState(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Results) != len(want) {
		t.Errorf("resume state holds %d results, want %d", len(st.Results), len(want))
	}
}

// The explore check starts only with room for one try (estimated as a fixed check) and
// searches only until the last try that still fits could start.
func TestSessionExploreFitsOneTry(t *testing.T) {
	s := &Session{opts: Options{Budget: 10 * time.Minute}, start: time.Now(), spent: []time.Duration{100 * time.Second, 70 * time.Second}}
	explore := Check{Name: "explore", Explore: true, Duration: 20 * time.Second}
	budget, why := s.fits(explore)
	if why != "" || budget <= 0 || budget > 10*time.Minute-70*time.Second+time.Second {
		t.Errorf("explore with 10m left: budget %v (%s), want at most 10m - 70s + 1s", budget, why)
	}
	s.opts.Budget = time.Minute
	if _, why := s.fits(explore); !strings.Contains(why, "budget") {
		t.Errorf("explore with 1m left for a 70s try: %q, want not run for the budget", why)
	}
	s.spent = []time.Duration{100 * time.Second, 20 * time.Second}
	s.opts.Budget = 50 * time.Second
	if _, why := s.fits(explore); !strings.Contains(why, "takes about 1m0s") {
		t.Errorf("explore with 50s left: %q, want not run: it starts only with a minute left", why)
	}
}

// The explore check counts the tries that proved something: one whose drawn schedule did not
// take effect whole (unknown) does not count, and another is drawn, up to twice the tries
// asked for; too few valid tries leave it unknown, never a pass; a find ends it invalid.
func TestExploreCountsOnlyTriesThatProvedSomething(t *testing.T) {
	for _, tc := range []struct {
		name     string
		verdicts []string // per try, in order
		want     string
		tries    int
	}{
		{"a try proved nothing, another is drawn", []string{"unknown", "valid", "valid"}, harness.VerdictValid, 3},
		{"both tries valid", []string{"valid", "valid", "unknown"}, harness.VerdictValid, 2},
		{"too many proved nothing", []string{"unknown", "valid", "unknown", "unknown", "valid"}, harness.VerdictUnknown, 4},
		{"a find", []string{"valid", "invalid", "valid"}, harness.VerdictInvalid, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{opts: Options{Store: "etcd", Recipe: "etcd-election", OutDir: t.TempDir()}}
			n := 0
			r.exploreTry = func(_ context.Context, _ harness.Config, _ int, _ string) explore.Try {
				v := tc.verdicts[n]
				n++
				return explore.Try{Verdict: v}
			}
			checks, err := Plan(Options{Store: "etcd", Recipe: "etcd-election", OutDir: "x", Checks: []string{"explore"}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.runCheck(context.Background(), checks[0], time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.want || res.Tries != tc.tries || n != tc.tries {
				t.Errorf("verdict %s after %d tries (%d run), want %s after %d; %s", res.Verdict, res.Tries, n, tc.want, tc.tries, res.Explanation)
			}
			if tc.want == harness.VerdictUnknown && res.Reason != "explore-inconclusive" {
				t.Errorf("reason %q, want explore-inconclusive", res.Reason)
			}
			if tc.tries == 3 && res.Explanation != "2 valid tries; 1 more proved nothing (unknown 1, valid 2) and did not count" {
				t.Errorf("explanation %q: want the try that did not count named", res.Explanation)
			}
		})
	}
}

// Two assessments into one out dir: the second is refused while the first runs, naming the
// holder's pid, and runs nothing; once the first ended the out dir is free again.
func TestTwoAssessmentsOfOneOutDir(t *testing.T) {
	opts := Options{Store: "etcd", Recipe: "etcd-election", OutDir: t.TempDir(), Checks: []string{"fault-free"}}
	inRun, release := make(chan struct{}), make(chan struct{})
	first := func(_ context.Context, c Check, _ time.Duration) (CheckResult, error) {
		close(inRun)
		<-release
		return CheckResult{Check: c, Verdict: harness.VerdictValid}, nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := runWith(context.Background(), opts, first)
		done <- err
	}()
	<-inRun
	ran := false
	_, err := runWith(context.Background(), opts, func(_ context.Context, c Check, _ time.Duration) (CheckResult, error) {
		ran = true
		return CheckResult{Check: c, Verdict: harness.VerdictValid}, nil
	})
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ran || err == nil || !errors.Is(err, ErrOutDirInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) ||
		!strings.Contains(err.Error(), "another --out") {
		t.Errorf("second assessment: ran %v, error %v: want refused, naming the holder's pid and a way out", ran, err)
	}
	f := &fakeRuns{}
	if _, err := runWith(context.Background(), opts, f.run); err != nil {
		t.Errorf("after the first ended: %v", err)
	}
}

// The state file's temporary name is the writer's own: a temporary file of another writer
// at the old fixed name (assess-state.json.tmp) is neither renamed nor in the way.
func TestStateSaveUsesItsOwnTemporaryFile(t *testing.T) {
	out := t.TempDir()
	other := filepath.Join(out, StateFile+".tmp")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	st := &state{path: filepath.Join(out, StateFile), Results: map[string]CheckResult{}}
	if err := st.save(); err != nil {
		t.Fatalf("save beside another writer's temporary file: %v", err)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("out dir holds %v: want the state and the other writer's file only", names)
	}
}

// The explore check stops after three tries in a row that could not run (no engine), as
// replay and explore do, and is a harness error, not a search of twice --explore-runs.
func TestExploreCheckStopsAfterHarnessErrorsInARow(t *testing.T) {
	r := &runner{opts: Options{Store: "etcd", Recipe: "etcd-election", OutDir: t.TempDir(), ExploreRuns: 20}}
	n := 0
	r.exploreTry = func(context.Context, harness.Config, int, string) explore.Try {
		n++
		return explore.Try{Err: errors.New("setup: no Docker engine answers")}
	}
	checks, err := Plan(Options{Store: "etcd", Recipe: "etcd-election", OutDir: "x", Checks: []string{"explore"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.runCheck(context.Background(), checks[0], time.Hour)
	if n != explore.MaxErrorsInARow || !errors.Is(err, explore.ErrHarnessErrors) || res.Verdict != VerdictError ||
		!strings.Contains(res.Error, "no Docker engine answers") || res.Tries != n {
		t.Errorf("%d tries run, result %s (%d tries, %q), error %v: want %d, a harness error naming the cause",
			n, res.Verdict, res.Tries, res.Error, err, explore.MaxErrorsInARow)
	}
}
