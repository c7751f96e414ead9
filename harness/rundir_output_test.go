package harness

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// config.json and the run's other JSON files are written by rename: a FIFO or a symlink where
// one goes is refused and left as it was; so is a "latest" that is not a symlink.
func TestRunFilesRefuseNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "config.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("kept"), 0o644)
	link := filepath.Join(dir, "outcome.json")
	os.Symlink(target, link)
	for _, p := range []string{fifo, link} {
		before, _ := os.Lstat(p)
		if err := writeJSON(p, map[string]int{"a": 1}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v, want a refusal", p, err)
		}
		if after, err := os.Lstat(p); err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
			t.Errorf("%s was replaced (%v)", p, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "kept" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	latest := filepath.Join(dir, LatestLink)
	if err := syscall.Mkfifo(latest, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := pointLatest(dir, "run-1"); err == nil || !strings.Contains(err.Error(), "not a symlink") {
		t.Errorf("latest a FIFO: %v, want a refusal", err)
	}
	if fi, err := os.Lstat(latest); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("latest was replaced (%v)", err)
	}
}
