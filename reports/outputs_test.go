package reports

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nonRegularOutputs makes a FIFO and a symlink to a regular file in a new directory: outputs
// a writer must refuse, and leave as they were.
func nonRegularOutputs(t *testing.T) (fifo, link, target string) {
	t.Helper()
	dir := t.TempDir()
	fifo, link, target = filepath.Join(dir, "fifo"), filepath.Join(dir, "link"), filepath.Join(dir, "target")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return fifo, link, target
}

// --combine-junit /dev/null (or any device, FIFO or symlink) is refused: the rename would
// replace it with a regular file.
func TestOutputsRefuseNonRegular(t *testing.T) {
	store := shardStore(t, "etcd-a")
	in := []string{filepath.Join(store, JUnitFile)}
	fifo, link, target := nonRegularOutputs(t)
	for _, out := range []string{fifo, link} {
		before, _ := os.Lstat(out)
		err := CombineJUnit(in, out)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), out) {
			t.Errorf("combine junit into %s: %v, want a refusal naming it", out, err)
		}
		if after, err := os.Lstat(out); err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
			t.Errorf("%s was replaced (%v)", out, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "kept" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if err := RenderScorecard(fifo, ScorecardView{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("scorecard page into a FIFO: %v", err)
	}
}
