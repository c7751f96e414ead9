//go:build chaos

package examples

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
)

// TestSidecarBehindYourOwnApplication runs examples/sidecar/app.py, an application written
// from docs/candidates.md alone (Python standard library) that runs the project's
// leader-election sidecar from $SPLITBRAIN_BIN, on the real kubernetes store, with the
// sidecar alone paused for 3xTTL right after a renew. The contract must hold as documented:
// the sidecar found by argv[0] and paused, its steps reaching the history through the
// application's stdout, a takeover while it is stopped, writes accepted, no contract
// violation, and a valid verdict on the fenced resource.
func TestSidecarBehindYourOwnApplication(t *testing.T) {
	store := t.TempDir()
	if d := os.Getenv("SPLITBRAIN_STORE_DIR"); d != "" {
		store = d
	}
	cfg := harness.Config{Store: "kubernetes", CandidateCmd: "sidecar/app.py", CandidatePackages: []string{"python3"},
		Nodes: 3, Nemesis: "pause:target=leader,process=sidecar,on=step:lease-renewed,for=3xTTL,count=1",
		FaultTime: time.Minute, Until: "writes=3", Recovery: 2 * time.Second, StoreRoot: store,
		TestName: "sidecar-app"}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	out, err := harness.Run(ctx, cfg)
	if out == nil {
		t.Fatalf("run did not start: %v", err)
	}
	t.Logf("verdict %s %v, counts %+v, run dir %s", out.Verdict, out.Reasons, out.Counts, out.RunDir)
	if err != nil {
		t.Fatalf("run error: %v", err)
	}
	if out.Verdict != harness.VerdictValid {
		t.Errorf("verdict %s, want valid (reasons %v; %v)", out.Verdict, out.Reasons, out.Explanations)
	}
	if out.Counts.ContractViolations > 0 {
		t.Errorf("%d contract violations", out.Counts.ContractViolations)
	}
	if out.Counts.Elections < 2 || out.Counts.WritesAccepted < 1 {
		t.Errorf("%d elections and %d accepted writes: want a takeover while the leader's sidecar was stopped, and writes", out.Counts.Elections, out.Counts.WritesAccepted)
	}
	evs, _, err := history.ReadFile(filepath.Join(out.RunDir, harness.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]int{}
	var paused *history.Event
	for i, e := range evs {
		switch {
		case e.Kind == history.KindStep:
			steps[e.Name]++
		case e.Kind == history.KindFaultStart && e.Fault == "pause":
			paused = &evs[i]
		}
	}
	if steps["lease-acquired"] < 2 || steps["lease-renewed"] < 1 {
		t.Errorf("the sidecar's steps in the history: %v; want lease-acquired by two leaders and renews (they reach the harness on the stdout it inherits)", steps)
	}
	if paused == nil || paused.Err != "" {
		t.Errorf("pause of the sidecar: %+v; want it found by argv[0] and stopped", paused)
	}
	eng, err := platform.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	platformtest.AssertNoLeftovers(t, eng, out.RunID)
}
