//go:build chaos

package examples

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
	"github.com/splitbrain-chaos/splitbrain/suite"
)

// exampleRows matches the matrix rows of the examples and their twins.
const exampleRows = `^[a-z]+/(go|go-broken|python-candidate|python-candidate_broken|shell-candidate|shell-candidate_broken)/`

// TestExamples runs every example candidate and its broken twin as the matrix rows in
// suite/matrix.yaml describe them (real stores, real faults): each correct example must be
// judged valid and each twin invalid for the reason the row names. -short runs the correct
// ones only.
func TestExamples(t *testing.T) {
	m, err := suite.Load("../suite/matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := m.Select(suite.TierNightly, exampleRows)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 6 {
		t.Fatalf("want 6 example rows (3 examples, 3 twins) in the matrix, got %d", len(cases))
	}
	store := t.TempDir()
	if d := os.Getenv("SPLITBRAIN_STORE_DIR"); d != "" {
		store = d
	}
	for _, c := range cases {
		if testing.Short() && c.Row.Expect.Verdict != "valid" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			// Rows are built to run side by side (matrix --parallel): -parallel at a time.
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			res := suite.RunCase(ctx, c, store, io.Discard)
			if !res.Match() {
				dir := ""
				if res.Outcome != nil {
					dir = res.Outcome.RunDir
				}
				t.Fatalf("%s: err %v, differences %v (run dir %s)", c.Name, res.Err, res.Diffs, dir)
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
