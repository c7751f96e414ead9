//go:build chaos

package suite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/reports"
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
	// The tier runs as shards into stores of their own, at the same time, merged into the
	// store root at the end: the same path as a fanned-out nightly (docs/scale.md), on real
	// runs, in a quarter of the wall time (rows mostly wait on servers and faults), as make chaos.
	const nShards = 4
	shards := Partition(cases, nShards)
	pool := harness.NewStorePool()
	pool.MaxIdle = nShards // each shard keeps its last cluster for its next row of that store
	// Cleanup also runs when a subtest fails or the test's context ends.
	t.Cleanup(func() {
		if err := pool.Close(context.Background()); err != nil {
			t.Errorf("store pool: %v", err)
		}
	})
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	shardRoots := make([]string, len(shards))
	shardDone := make([][]Result, len(shards))
	for s := range shards {
		shardRoot, err := os.MkdirTemp(root, ".shard-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(shardRoot) })
		shardRoots[s] = shardRoot
	}
	start := time.Now()
	var wg sync.WaitGroup
	for s, sh := range shards {
		// t.Run may be called from several goroutines; each shard's rows stay in order.
		wg.Go(func() {
			for _, i := range poolOrder(sh) {
				c := sh[i]
				t.Run(c.Name, func(t *testing.T) {
					r := RunCasePooled(ctx, c, shardRoots[s], logWriter{t}, pool)
					shardDone[s] = append(shardDone[s], r)
					if r.Outcome != nil {
						t.Logf("shard %d/%d, run dir %s: verdict %s, reasons %v, findings %v, failovers %v, wall %v (overhead %v)",
							s+1, nShards, r.Outcome.RunDir, r.Observed.Verdict, r.Observed.Reasons, r.Observed.Findings, r.Observed.Failovers,
							r.Wall.Round(time.Second), r.Overhead().Round(time.Second))
					}
					if r.Err != nil {
						t.Fatalf("harness error: %v", r.Err)
					}
					for _, d := range r.Diffs {
						t.Errorf("%s: %s (note: %s)", c.Name, d, c.Row.Note)
					}
					for _, n := range r.Notes {
						t.Logf("%s: %s", c.Name, n)
					}
				})
			}
		})
	}
	wg.Wait()
	var done []Result
	for _, sd := range shardDone {
		done = append(done, sd...)
	}
	if len(done) == 0 {
		return
	}
	var b strings.Builder
	WriteTable(&b, done)
	t.Logf("tier %s, %d rows in %v:\n%s", testTier(), len(done), time.Since(start).Round(time.Second), b.String())
	for s := range shardRoots {
		if len(shardDone[s]) == 0 {
			continue
		}
		if _, err := Publish(shardRoots[s], shardDone[s]); err != nil {
			// Report rendering is the reports package's; its failure does not change verdicts.
			t.Logf("publishing shard %d: %v", s+1, err)
		}
	}
	var nonEmpty []string
	var want []string
	for s, sr := range shardRoots {
		if len(shardDone[s]) == 0 {
			continue
		}
		nonEmpty = append(nonEmpty, sr)
		runs, _ := reports.ScanStore(sr)
		for _, r := range runs {
			want = append(want, r.Link+" "+r.Verdict)
		}
	}
	sum, err := reports.MergeStores(root, nonEmpty)
	if err != nil {
		// Keep the shard stores for a look (the cleanup would remove them): which runs clash.
		for _, sr := range shardRoots {
			kept := filepath.Join(root, ".failed-merge", filepath.Base(sr))
			if os.MkdirAll(filepath.Dir(kept), 0o755) == nil && os.Rename(sr, kept) == nil {
				t.Logf("shard store kept at %s", kept)
			}
		}
		t.Fatalf("merge of the shard stores: %v", err)
	}
	if sum.Testcase != len(done) {
		t.Errorf("merged junit has %d rows, want %d", sum.Testcase, len(done))
	}
	merged, _ := reports.ScanStore(root)
	have := map[string]bool{}
	for _, r := range merged {
		have[r.Link+" "+r.Verdict] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("merged index lacks shard run %s", w)
		}
	}
	t.Logf("merged %d runs of %d shards into %s (junit %s, index %s)", sum.Runs, sum.Shards, root, sum.JUnit, filepath.Join(root, IndexFile))
}
