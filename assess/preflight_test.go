package assess

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Inputs every check would fail on are found before the battery: a 1ns TTL, a candidate
// command that is a FIFO, a directory that does not build (named by go build's error, not by
// an internal cache path that does not exist), an output file that is a FIFO.
func TestPreflight(t *testing.T) {
	t.Setenv("SPLITBRAIN_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	notGo := filepath.Join(dir, "not-a-package")
	os.Mkdir(notGo, 0o755)
	os.WriteFile(filepath.Join(notGo, "main.go"), []byte("package main\nfunc main() {}\n"), 0o644)
	outFIFO := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(outFIFO, ScorecardJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	base := func() Options {
		return Options{Store: "etcd", Recipe: "etcd-election", OutDir: t.TempDir(), Checks: []string{"kill-leader"}}
	}
	for _, c := range []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"ttl", func(o *Options) { o.TTL = time.Nanosecond }, "--ttl 1ns"},
		{"fifo candidate", func(o *Options) { o.Recipe, o.Store, o.CandidateCmd = "", "redis", []string{fifo} }, "not a regular file (a FIFO)"},
		{"dev zero", func(o *Options) { o.Recipe, o.Store, o.CandidateCmd = "", "redis", []string{"/dev/zero"} }, "not a regular file (a device)"},
		{"no go.mod", func(o *Options) { o.Recipe, o.Store, o.CandidateCmd = "", "redis", []string{notGo} }, "go build"},
		{"scorecard fifo", func(o *Options) { o.OutDir = outFIFO }, ScorecardJSON + ": not a regular file (a FIFO)"},
		{"explore first", func(o *Options) { o.Checks, o.TTL = []string{"explore"}, time.Nanosecond }, "--ttl 1ns"},
	} {
		o := base()
		c.mod(&o)
		err := Preflight(o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		} else if t.Logf("%s: %v", c.name, err); strings.Contains(err.Error(), "build-failed") {
			t.Errorf("%s: the error names the cache path of a failed build: %v", c.name, err)
		}
	}
	if err := Preflight(base()); err != nil {
		t.Errorf("a runnable assessment: %v", err)
	}
}
