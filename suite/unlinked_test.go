package suite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// TestUnlinkedRowFailsWhenTheFullBinaryCannotBeBuilt: a row the core cannot run fails by name
// with the build's reason; it is never left out or counted as run.
func TestUnlinkedRowFailsWhenTheFullBinaryCannotBeBuilt(t *testing.T) {
	full := StartFullBuild(context.Background(), "", t.TempDir()+"/splitbrain", &strings.Builder{})
	<-full.Ready()
	r := full.Run(context.Background(), Case{Name: "kubernetes/k8s-lease/none", Config: harness.Config{Store: storekinds.Kubernetes}})
	if r.Match() || r.Err == nil || !strings.Contains(r.Err.Error(), "no source tree") {
		t.Errorf("result %+v: want a failed row naming the missing source tree", r)
	}
}

// TestFullBuildLinksOnlyWhenOutOfDate: make chaos builds the full binary on every run; with
// nothing changed go build must find it up to date instead of linking it again (12-32 s
// beside the rows each time while the build started from a fresh file), and after a change
// the new binary must be in place. A real go build of a one-file module.
func TestFullBuildLinksOnlyWhenOutOfDate(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/fullbuild\n\ngo 1.22\n")
	main := func(say string) string {
		return "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"" + say + "\") }\n"
	}
	write("cmd/splitbrain/main.go", main("one"))
	bin := filepath.Join(root, "bin", "splitbrain")
	build := func() string {
		t.Helper()
		var log strings.Builder
		full := StartFullBuild(context.Background(), root, bin, &log)
		<-full.Ready()
		if full.err != nil {
			t.Fatalf("build: %v", full.err)
		}
		if _, err := os.Stat(bin + ".building"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the build left %s.building behind (%v)", bin, err)
		}
		return log.String()
	}
	runs := func(want string) {
		t.Helper()
		out, err := exec.Command(bin).Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Fatalf("%s printed %q (%v), want %q", bin, got, err, want)
		}
	}
	if log := build(); !strings.Contains(log, "built in") {
		t.Fatalf("first build: %q, want it built", log)
	}
	runs("one")
	if log := build(); !strings.Contains(log, "up to date") {
		t.Fatalf("second build with nothing changed: %q, want up to date (no link)", log)
	}
	runs("one")
	write("cmd/splitbrain/main.go", main("two"))
	if log := build(); !strings.Contains(log, "built in") {
		t.Fatalf("build after a change: %q, want it built", log)
	}
	runs("two")
}
