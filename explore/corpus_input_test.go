package explore

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// explore --corpus X --resume reads X bounded and without blocking: a FIFO hung the resume
// (SIGTERM did not end it), /dev/zero and a 3 GB sparse file exhausted memory.
func TestLoadCorpusRefusesNonRegularAndHuge(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	os.Symlink("/dev/zero", zero)
	sparse := filepath.Join(dir, "sparse.json")
	os.WriteFile(sparse, nil, 0o644)
	if err := os.Truncate(sparse, 3<<30); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "not a regular file (a FIFO)", zero: "not a regular file (a device)", sparse: "file too large"} {
		done := make(chan error, 1)
		go func() { _, err := LoadCorpus(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: LoadCorpus still running after 10s", path)
		}
	}
}
