package assess

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
