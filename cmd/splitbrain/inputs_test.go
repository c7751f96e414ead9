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

// assess checks its inputs as run does, before the battery: exit 64 naming the problem, not
// a harness error for every check and exit 2.
func TestAssessRefusesBadInputUpFront(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-inputs-test.sock")
	t.Setenv("SPLITBRAIN_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	notGo := filepath.Join(dir, "pkg")
	os.Mkdir(notGo, 0o755)
	os.WriteFile(filepath.Join(notGo, "main.go"), []byte("package main\nfunc main() {}\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "redis", "--recipe", "redis-setnx", "--ttl", "1ns"}, "--ttl 1ns"},
		{[]string{"--store", "redis", "--candidate-cmd", fifo}, "not a regular file (a FIFO)"},
		{[]string{"--store", "redis", "--candidate-cmd", "/dev/zero"}, "not a regular file (a device)"},
		{[]string{"--store", "redis", "--candidate-cmd", notGo}, "go.mod file not found"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		args := append([]string{"assess", "--checks", "fault-free,kill-leader", "--budget", "2m", "--out", out}, c.args...)
		code, stderr := runBounded(t, args)
		if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "build-failed") {
			t.Errorf("%v: exit %d, %q; want 64 and %q", c.args, code, stderr, c.want)
		}
		if _, err := os.Stat(filepath.Join(out, "runs")); err == nil {
			t.Errorf("%v: a run directory was made", c.args)
		}
	}
}
