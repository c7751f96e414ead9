//go:build chaos

package shrink

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
	"github.com/splitbrain-chaos/splitbrain/reports/runconfig"
)

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// The Redis zombie leader, unfenced (suite/matrix.yaml): a real invalid run is shrunk, on
// real containers, to a smaller plan that still fails, and every try is a replay of a
// concrete plan linked to the original.
func TestShrinkRedisZombie(t *testing.T) {
	if testing.Short() {
		t.Skip("several real runs (about 10 minutes)")
	}
	root := t.TempDir()
	if r := os.Getenv(harness.EnvStoreDir); r != "" {
		root = filepath.Join(r, "chaos-tests", t.Name())
	}
	cfg := harness.Config{Store: "redis", Recipe: "redis-setnx", Nodes: 3, ResourceMode: "unfenced",
		Nemesis: "pause-leader", Seed: 1, Warmup: 4 * time.Second, FaultTime: 25 * time.Second, Recovery: 3 * time.Second,
		StoreRoot: root, Progress: testWriter{t}, ProgressMode: harness.ProgressQuiet}
	out, err := harness.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Load(out.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Verdict != harness.VerdictInvalid || !slices.Contains(rec.Codes, "stale-write-accepted") {
		t.Fatalf("the zombie run came out %s %v; the matrix row expects invalid stale-write-accepted (a miss is about 1 in 2,500)", rec.Verdict, rec.Codes)
	}
	start, err := rec.CaseOf()
	if err != nil {
		t.Fatal(err)
	}
	if len(start.Plan.Faults) < 2 {
		t.Fatalf("the recorded plan has %d faults, want the pause-leader repeats (>= 2)", len(start.Plan.Faults))
	}

	runner := HarnessRunner{Base: rec.Config, Want: []string{"stale-write-accepted"}, Configure: func(c *harness.Config) {
		c.TestName, c.Progress, c.ProgressMode = "shrink-tries", testWriter{t}, harness.ProgressQuiet
	}}
	budget := 9 * time.Minute
	if dl, ok := t.Deadline(); ok && time.Until(dl)-2*time.Minute < budget {
		budget = time.Until(dl) - 2*time.Minute
	}
	var steps []Step
	res, err := Shrink(context.Background(), runner, start, Options{Tries: 2, Budget: budget, Step: func(s Step) {
		t.Logf("step %d: %s → kept %v (%s)", s.N, s.Move, s.Kept, s.Current)
		steps = append(steps, s)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped %s after %d steps, %d tries, %v: %s → %s", res.Stopped, res.Steps, res.Tries, res.Elapsed, res.Start.Size(), res.Minimal.Size())
	if res.Elapsed > budget+2*time.Minute {
		t.Errorf("shrink took %v with a %v budget", res.Elapsed, budget)
	}
	if !res.Minimal.Size().Less(res.Start.Size()) {
		t.Fatalf("no smaller failing plan within %v (%d steps): %s", budget, res.Steps, res.Minimal.Size())
	}
	// The minimal plan's failing try is a real invalid run of exactly that plan, linked to
	// the original.
	dir := res.LastFailure.RunDir
	verdict, codes, err := ReadVerdict(dir)
	if err != nil || verdict != harness.VerdictInvalid || !slices.Contains(codes, "stale-write-accepted") {
		t.Fatalf("minimal run %s: %s %v %v", dir, verdict, codes, err)
	}
	rc, err := runconfig.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rc.ReplayOf != rec.Dir {
		t.Errorf("minimal run's replay_of %q, want %q", rc.ReplayOf, rec.Dir)
	}
	var ran nemesis.Plan
	if err := json.Unmarshal(rc.Plan, &ran); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(res.Minimal.Plan.Faults)
	got, _ := json.Marshal(ran.Faults)
	if string(got) != string(want) {
		t.Errorf("the minimal run ran plan %s, want %s", got, want)
	}
	for _, s := range steps {
		if s.Kept && !slices.ContainsFunc(s.Tries, func(o Outcome) bool { return o.Failed }) {
			t.Errorf("step %d kept without a failing try", s.N)
		}
	}
}
