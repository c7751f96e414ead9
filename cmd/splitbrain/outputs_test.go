package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runBounded runs the command line and fails the test if it has not returned within 20 s
// (a FIFO opened for writing blocks until a reader comes).
func runBounded(t *testing.T, args []string) (int, string) {
	t.Helper()
	type res struct {
		code int
		err  string
	}
	done := make(chan res, 1)
	go func() {
		var out, errb strings.Builder
		code := runMain(args, &out, &errb)
		done <- res{code, errb.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("%v: still running after 20s", args)
	}
	return 0, ""
}

// Outputs written by rename are checked before anything is written: a FIFO or a symlink
// named as --combine-junit or --corpus is refused with 64, and stays what it was.
func TestOutputPathsRefuseNonRegular(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-outputs-test.sock")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("kept"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	store := t.TempDir()
	for _, p := range []string{fifo, link} {
		before, _ := os.Lstat(p)
		for _, args := range [][]string{
			{"report", "--index", "--store", store, "--combine-junit", p},
			{"explore", "--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--corpus", p},
		} {
			code, stderr := runBounded(t, args)
			flag := args[len(args)-2]
			if code != exitUsage || !strings.Contains(stderr, flag+" "+p+": not a regular file") || !strings.Contains(stderr, "give the path of a regular file") {
				t.Errorf("%v: exit %d, %q; want 64 naming %s", args, code, stderr, flag)
			}
			if after, err := os.Lstat(p); err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
				t.Errorf("%v replaced %s (%v)", args, p, err)
			}
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "kept" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if _, err := os.Stat(filepath.Join(store, "index.html")); err == nil {
		t.Error("a refused --combine-junit still rendered the index")
	}
}

// shrink writes its log and result into the run directory it is given: a FIFO there (which
// the log's open would block on) is refused before anything starts.
func TestShrinkRefusesNonRegularOutputs(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-outputs-test.sock")
	b, err := os.ReadFile("../../reports/runconfig/testdata/run/config.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "redis-redis-setnx-x", "20261122T000000.000Z")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
	os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"verdict":"invalid","reasons":[{"code":"stale-write-accepted","severity":"invalid"}]}`), 0o644)
	fifo := filepath.Join(dir, shrinkLogFile)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := runBounded(t, []string{"shrink", dir})
	if code != exitUsage || !strings.Contains(stderr, fifo+": not a regular file (a FIFO)") {
		t.Errorf("exit %d, %q; want 64 naming the FIFO", code, stderr)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced (%v)", err)
	}
}
