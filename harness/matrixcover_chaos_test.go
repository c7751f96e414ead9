//go:build chaos

package harness

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// smokeRowsFor names, by recipe, the rows of the known-answer matrix's smoke tier
// (suite/matrix.yaml, run by `go test -tags chaos -short ./suite/` in `make test`) that run
// fault on the default fenced resource with the default workload and expect a valid
// verdict. A whole-scenario chaos test here leaves such a recipe to its row: the row runs the
// same scenario against real servers and checks the same verdict, so running it twice only
// costs time. withBound also asks for the row's failover_max (a kill-leader test's bound).
func smokeRowsFor(t *testing.T, fault string, withBound bool) map[string]string {
	return smokeRowsWith(t, fault, "", withBound)
}

// smokeRowsWith is smokeRowsFor for rows with workload (""= the default); withBound asks for
// the bound the workload's test holds (failover_max; handoff_max for handoff rows).
func smokeRowsWith(t *testing.T, fault, workload string, withBound bool) map[string]string {
	t.Helper()
	// go test runs a package's tests in its directory.
	path := filepath.Join("..", "suite", "matrix.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the matrix decides which recipes this test leaves to it: %v", err)
	}
	var m struct {
		Defaults struct{ Workload, Resource string }
		Rows     []struct {
			Store, Recipe, Fault, Workload, Resource string
			Tags                                     []string
			Expect                                   struct {
				Verdict     string
				FailoverMax string `yaml:"failover_max"`
				HandoffMax  string `yaml:"handoff_max"`
			}
		}
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]string{}
	for _, r := range m.Rows {
		r.Workload, r.Resource = cmp.Or(r.Workload, m.Defaults.Workload), cmp.Or(r.Resource, m.Defaults.Resource)
		bound := r.Expect.FailoverMax
		if workload == "handoff" {
			bound = r.Expect.HandoffMax
		}
		if r.Recipe == "" || r.Fault != fault || r.Workload != workload || (r.Resource != "" && r.Resource != "fenced") ||
			!slices.Contains(r.Tags, "smoke") || r.Expect.Verdict != "valid" || (withBound && bound == "") {
			continue
		}
		out[r.Recipe] = r.Store + "/" + r.Recipe + "/" + r.Fault
		if workload != "" {
			out[r.Recipe] += "/" + workload
		}
	}
	return out
}
