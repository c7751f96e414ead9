package harness

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test when fn has not returned in 10 s: a FIFO opened for reading without
// O_NONBLOCK waits for a writer forever.
func within(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10s", what)
		return nil
	}
}

// A --candidate-cmd that is a FIFO, a device or a huge (sparse) file is refused when the
// configuration is validated, at once: setup once hung on a FIFO (Ctrl-C could not end it)
// and tried to allocate a 20 GB sparse file whole.
func TestCandidateCmdRefusedAtValidation(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	if err := os.WriteFile(sparse, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 20<<30); err != nil {
		t.Fatal(err)
	}
	fifoLink := filepath.Join(dir, "fifo-link")
	os.Symlink(fifo, fifoLink)
	for path, want := range map[string]string{
		fifo:        "not a regular file (a FIFO)",
		fifoLink:    "not a regular file (a FIFO)",
		"/dev/zero": "not a regular file (a device)",
		sparse:      "at most 1024 MiB",
	} {
		c := validConfig()
		c.Recipe, c.Store, c.CandidateCmd = "", "redis", path
		err := within(t, path, c.Validate)
		if err == nil || !strings.Contains(err.Error(), "--candidate-cmd: "+path) || !strings.Contains(err.Error(), want) {
			t.Errorf("--candidate-cmd %s: %v, want an error saying %q", path, err, want)
		}
		// Setup reads it through the same bounded, non-blocking reader (the file may have
		// been swapped since validation).
		r := &run{cfg: Config{CandidateCmd: path}}
		err = within(t, path+" (setup)", func() error { _, err := r.externalCandidate(); return err })
		if err == nil || !strings.Contains(err.Error(), want[:10]) && !strings.Contains(err.Error(), "too large") {
			t.Errorf("setup reading %s: %v", path, err)
		}
	}
	// An ordinary script still passes, through a symlink too.
	script := filepath.Join(dir, "cand.sh")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	link := filepath.Join(t.TempDir(), "cand")
	os.Symlink(script, link)
	c := validConfig()
	c.Recipe, c.Store, c.CandidateCmd = "", "redis", link
	if err := c.Validate(); err != nil {
		t.Errorf("a symlink to a script: %v", err)
	}
}
