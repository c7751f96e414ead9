//go:build chaos

package suite

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
)

// EnvTier picks the tier of `go test -tags chaos ./suite/...` when neither -short nor CI=true
// selects smoke; the default is the full matrix (nightly).
const EnvTier = "SPLITBRAIN_MATRIX_TIER"

func testTier() string {
	if testing.Short() || os.Getenv("CI") == "true" {
		return TierSmoke
	}
	if t := os.Getenv(EnvTier); t != "" {
		return t
	}
	return TierNightly
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// TestMatrix runs every row of the tier as a subtest named like the row
// (store/recipe/fault[/resource][/workload]), so -run selects rows:
//
//	go test -tags chaos -short -run 'TestMatrix/redis/' ./suite/
func TestMatrix(t *testing.T) {
	m, err := Load("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := m.Select(testTier(), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if dl, ok := t.Deadline(); ok {
		// Leave time for the last run to heal and tear down before the binary's own deadline.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-3*time.Minute))
		defer cancel()
	}
	root := StoreRoot("")
	pool := harness.NewStorePool()
	// Cleanup also runs when a subtest fails or the test's context ends.
	t.Cleanup(func() {
		if err := pool.Close(context.Background()); err != nil {
			t.Errorf("store pool: %v", err)
		}
	})
	var done []Result
	start := time.Now()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			r := RunCasePooled(ctx, c, root, logWriter{t}, pool)
			done = append(done, r)
			if r.Outcome != nil {
				t.Logf("run dir %s: verdict %s, reasons %v, findings %v, failovers %v, wall %v (overhead %v)",
					r.Outcome.RunDir, r.Observed.Verdict, r.Observed.Reasons, r.Observed.Findings, r.Observed.Failovers,
					r.Wall.Round(time.Second), r.Overhead().Round(time.Second))
			}
			if r.Err != nil {
				t.Fatalf("harness error: %v", r.Err)
			}
			for _, d := range r.Diffs {
				t.Errorf("%s: %s (note: %s)", c.Name, d, c.Row.Note)
			}
		})
	}
	if len(done) == 0 {
		return
	}
	var b strings.Builder
	WriteTable(&b, done)
	t.Logf("tier %s, %d rows in %v:\n%s", testTier(), len(done), time.Since(start).Round(time.Second), b.String())
	junit, err := Publish(root, done)
	t.Logf("junit: %s", junit)
	if err != nil {
		// Report rendering is the reports package's; its failure does not change verdicts.
		t.Logf("publishing reports: %v", err)
	}
}
