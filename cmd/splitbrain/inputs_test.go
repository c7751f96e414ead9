package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Files named on the command line are read bounded and without blocking, and checked before
// anything starts: a --candidate-cmd FIFO hung run's setup (Ctrl-C could not end it), a 20 GB
// sparse one made it allocate 20 GB; exit 64 now, at once.
func TestRunRefusesUnreadableCandidateCmd(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-inputs-test.sock")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	os.WriteFile(sparse, nil, 0o755)
	if err := os.Truncate(sparse, 20<<30); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "not a regular file (a FIFO)", sparse: "at most 1024 MiB", "/dev/zero": "not a regular file (a device)"} {
		code, stderr := runBounded(t, []string{"run", "--store", "redis", "--candidate-cmd", path, "--time", "10s"})
		if code != exitUsage || !strings.Contains(stderr, "--candidate-cmd: "+path) || !strings.Contains(stderr, want) {
			t.Errorf("run --candidate-cmd %s: exit %d, %q; want 64 and %q", path, code, stderr, want)
		}
	}
}
