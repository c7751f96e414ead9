//go:build chaos

package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/reports"
)

// TestFullBinaryRunsAHandedOnRow is the core build's hand-off in small, on real clusters: the
// Redis row runs in this process, the DynamoDB row (one the core build does not link) twice
// in the child `splitbrain matrix --serve` of the full binary, as make chaos runs them, the
// second time on the cluster the first one left in the child's pool; all land in one store,
// junit.xml and index with their rendered reports. The core build itself is
// compiled by `make vet` (go vet -tags core ./cmd/splitbrain/) and kept light by
// TestCoreBuildStaysLight; the order of the hand-off by TestUnlinkedRowsWaitWithoutASlot.
func TestFullBinaryRunsAHandedOnRow(t *testing.T) {
	t.Parallel() // beside TestMatrix: its own store directory and clusters
	bin := os.Getenv(images.EnvBinary)
	if bin == "" {
		t.Fatalf("%s is not set: make test sets it to bin/splitbrain", images.EnvBinary)
	}
	m, err := Load("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	full := UseFullBinary(bin)
	full.MatrixFile, full.Tier, full.StoreRoot = filepath.Join("..", DefaultFile), TierDefault, store
	var results []Result
	for _, row := range []string{"redis/redis-setnx/none/handoff", "dynamodb/dynamodb-lease/none", "dynamodb/dynamodb-lease/none"} {
		cases, err := m.Select(TierDefault, "^"+row+"$")
		if err != nil || len(cases) != 1 {
			t.Fatalf("row %s: %d cases, %v", row, len(cases), err)
		}
		var r Result
		if strings.HasPrefix(row, "dynamodb/") {
			r = full.Run(t.Context(), cases[0])
		} else {
			r = RunCase(t.Context(), cases[0], store, logWriter{t})
		}
		if !r.Match() || r.Outcome == nil {
			t.Errorf("%s: %s, diffs %v, error %v", row, r.Observed.Verdict, r.Diffs, r.Err)
		}
		results = append(results, r)
	}
	if st := full.Close(); st.Launched != 1 || st.Reused != 1 || st.Discarded != 0 {
		t.Errorf("the full binary's pool: %+v; want 1 cluster started and reused once", st)
	}
	junit, err := Publish(store, results)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	xml, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !strings.Contains(string(xml), `name="`+r.Case.Name+`"`) {
			t.Errorf("junit.xml has no testcase %s", r.Case.Name)
		}
		if r.Outcome == nil || !strings.HasPrefix(r.Outcome.RunDir, store) {
			t.Errorf("%s: run directory outside the store %s: %+v", r.Case.Name, store, r.Outcome)
			continue
		}
		if _, err := os.Stat(filepath.Join(r.Outcome.RunDir, reports.ReportFile)); err != nil {
			t.Errorf("%s: no rendered report: %v", r.Case.Name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(store, IndexFile)); err != nil {
		t.Errorf("no index: %v", err)
	}
}
