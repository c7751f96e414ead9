package explore

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// explore --corpus /dev/null once replaced the device by a regular file holding the corpus:
// Save refuses any path that is there and not a regular file, and leaves it as it was.
func TestCorpusSaveRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo, link, target := filepath.Join(dir, "fifo"), filepath.Join(dir, "link"), filepath.Join(dir, "target")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(target, []byte("kept"), 0o644)
	os.Symlink(target, link)
	c := &Corpus{Version: CorpusVersion, Seen: map[string]int{}}
	for _, p := range []string{fifo, link} {
		before, _ := os.Lstat(p)
		if err := c.Save(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("save into %s: %v, want a refusal", p, err)
		}
		if after, err := os.Lstat(p); err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
			t.Errorf("%s was replaced (%v)", p, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "kept" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("refused saves left files: %v", ents)
	}
}
