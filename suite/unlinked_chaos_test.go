//go:build chaos

package suite

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/reports"
)

// TestCoreHandsUnlinkedRowsToTheFullBinary is `make chaos` in small: the core build runs the
// Redis row itself and hands the DynamoDB row, whose client it does not link, to the full
// binary it builds beside it; both rows land in one store, index and junit.xml.
func TestCoreHandsUnlinkedRowsToTheFullBinary(t *testing.T) {
	t.Parallel() // beside TestMatrix: its own processes, store and clusters
	dir := t.TempDir()
	core := filepath.Join(dir, "splitbrain-core")
	build := exec.Command("go", "build", "-tags", "core", "-o", core, "./cmd/splitbrain")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags core: %v\n%s", err, out)
	}
	store := filepath.Join(dir, "store")
	rows := []string{"dynamodb/dynamodb-lease/none", "redis/redis-setnx/none/handoff"}
	cmd := exec.CommandContext(t.Context(), core, "matrix", "--file", filepath.Join("..", DefaultFile), "--tags", TierDefault,
		"--filter", "^("+strings.Join(rows, "|")+")$", "--parallel", "2", "--store", store, "--full-binary", filepath.Join(dir, "splitbrain"))
	cmd.Env = append(os.Environ(), "SPLITBRAIN_BINARY="+core)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("core matrix: %v", err)
	}
	for _, want := range []string{"this core build runs 1 of the rows; the other 1 run with the full binary", "PASS: every row as expected"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	junit, err := os.ReadFile(filepath.Join(store, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if !strings.Contains(string(junit), `name="`+row+`"`) {
			t.Errorf("junit.xml has no testcase %s", row)
		}
		report := filepath.Join(store, strings.ReplaceAll(row, "/", "--"), "latest", reports.ReportFile)
		if _, err := os.Stat(report); err != nil {
			t.Errorf("%s: no rendered report in the store: %v", row, err)
		}
	}
}
