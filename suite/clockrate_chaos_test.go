//go:build chaos

package suite

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
)

// TestClockRateIntervalWaiter runs the interval-waiter rows (testdata/interval-waiter, a
// correct lock client measuring its lease intervals on its monotonic clock) under slow and
// fast candidate clocks: each must be valid with no overlap, under --require exclusive. With
// a rate heal that stepped the monotonic line (issue 31 item 2) the slow row took a live lease.
func TestClockRateIntervalWaiter(t *testing.T) {
	m, err := Load("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := m.Select(TierNightly, `^redis/interval-waiter/`)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 2 {
		t.Fatalf("want the 2 interval-waiter rows (slow, fast) in the matrix, got %d", len(cases))
	}
	store := t.TempDir()
	if d := os.Getenv("SPLITBRAIN_STORE_DIR"); d != "" {
		store = d
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if c.Row.Expect.Verdict != "valid" {
				t.Fatalf("%s expects %q: these rows exist to show a correct waiter stays valid", c.Name, c.Row.Expect.Verdict)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			res := RunCase(ctx, c, store, io.Discard)
			dir := ""
			if res.Outcome != nil {
				dir = res.Outcome.RunDir
			}
			if !res.Match() {
				t.Fatalf("%s: err %v, differences %v (run dir %s)", c.Name, res.Err, res.Diffs, dir)
			}
			t.Logf("%s: as expected (run dir %s)", c.Name, dir)
			// The candidates' bind-mounted clock directories go with the containers.
			if _, err := os.Stat(filepath.Join(dir, "clock")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: the run directory still has its clock directory (%v)", c.Name, err)
			}
			if res.Outcome != nil {
				eng, err := platform.Connect(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer eng.Close()
				platformtest.AssertNoLeftovers(t, eng, res.Outcome.RunID)
			}
		})
	}
}
