package suite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestServeChildInterruptedOnceInItsOwnGroup: the child matrix runs in a process group of its
// own, so a Ctrl-C or a kill of make's group does not reach it besides the parent's own
// SIGINT, and it gets one SIGINT however many of its rows are cancelled: a second signal
// kills a real child before it has torn its clusters down. A shell script stands in for the
// child and counts the SIGINTs it gets.
func TestServeChildInterruptedOnceInItsOwnGroup(t *testing.T) {
	dir := t.TempDir()
	sigLog := filepath.Join(dir, "signals")
	script := filepath.Join(dir, "splitbrain")
	// It never answers a row; it counts SIGINTs until the test kills it.
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntrap 'echo INT >> "+sigLog+"' INT\necho started >> "+sigLog+"\nwhile :; do sleep 0.05; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	full := UseFullBinary(script)
	ctxA, cancelA := context.WithCancel(context.Background())
	ctxB, cancelB := context.WithCancel(context.Background())
	results := make(chan Result, 2)
	go func() { results <- full.Run(ctxA, Case{Name: "kubernetes/a"}) }()
	go func() { results <- full.Run(ctxB, Case{Name: "kubernetes/b"}) }()
	// The child is up once the script has written its first line.
	read := func() string { b, _ := os.ReadFile(sigLog); return string(b) }
	for end := time.Now().Add(30 * time.Second); !strings.Contains(read(), "started"); {
		if time.Now().After(end) {
			t.Fatal("the stand-in child did not start within 30 s")
		}
		// sleep: polls a file the shell script writes; no event to wait on.
		time.Sleep(20 * time.Millisecond)
	}
	full.mu.Lock()
	ch := full.child
	full.mu.Unlock()
	defer func() { _ = ch.cmd.Process.Kill(); <-ch.done }()
	if pgid, err := syscall.Getpgid(ch.cmd.Process.Pid); err != nil || pgid == syscall.Getpgrp() {
		t.Errorf("the child's process group is %d (%v), the same as the parent's %d: a Ctrl-C would signal it twice", pgid, err, syscall.Getpgrp())
	}
	// The rows are cancelled one after the other (two SIGINTs pending at once would merge into
	// one): the first cancel's SIGINT is logged before the second row is cancelled.
	cancelA()
	if r := <-results; r.Err == nil {
		t.Errorf("row %s: cancelled, but no error", r.Case.Name)
	}
	for end := time.Now().Add(10 * time.Second); !strings.Contains(read(), "INT"); {
		if time.Now().After(end) {
			t.Fatal("the child got no SIGINT within 10 s of its row's cancel")
		}
		// sleep: polls a file the shell script writes; no event to wait on.
		time.Sleep(20 * time.Millisecond)
	}
	cancelB()
	if r := <-results; r.Err == nil {
		t.Errorf("row %s: cancelled, but no error", r.Case.Name)
	}
	// The script's trap runs between its sleeps: give a second signal time to be logged.
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		// sleep: waits out a possible second SIGINT; no event says none is coming.
		time.Sleep(50 * time.Millisecond)
	}
	if n := strings.Count(read(), "INT"); n != 1 {
		t.Errorf("the child got %d SIGINTs for two cancelled rows, want 1", n)
	}
}
