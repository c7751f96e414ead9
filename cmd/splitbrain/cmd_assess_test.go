package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/assess"
)

func TestAssessHelpAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	runMain([]string{"assess", "--help"}, &out, &errb)
	help := out.String() + errb.String()
	for _, n := range assess.Names() {
		if !strings.Contains(help, n) {
			t.Errorf("assess --help does not name check %s", n)
		}
	}
	out.Reset()
	errb.Reset()
	code := runMain([]string{"assess", "--store", "etcd", "--checks", "pause", "--budget", "0s"}, &out, &errb)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	for _, want := range []string{"nothing to assess", "--budget 0s"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	out.Reset()
	errb.Reset()
	if code := runMain([]string{"assess", "--store", "redis", "--recipe", "redis-setnx", "--list"}, &out, &errb); code != exitValid {
		t.Fatalf("--list: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "zombie-window") || !strings.Contains(out.String(), "store-split              left out") {
		t.Errorf("--list on redis:\n%s", out.String())
	}
}

// assess's progress lines quote candidates' output (a harness error carries their log tails)
// and their paths: no control character of theirs may act on the terminal.
func TestAssessProgressIsPrintable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-assess-test.sock") // each check: a harness error, no container
	dir := t.TempDir()
	cand := filepath.Join(dir, "cand\x1b]0;PWNED\a\x1b[31m.sh")
	if err := os.WriteFile(cand, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	runMain([]string{"assess", "--store", "redis", "--candidate-cmd", cand, "--checks", "fault-free",
		"--parallel", "1", "--out", filepath.Join(dir, "out")}, &out, &errb)
	if strings.ContainsAny(out.String(), "\x1b\a") {
		t.Errorf("stdout carries raw control characters:\n%q", out.String())
	}
	if !strings.Contains(out.String(), `cand\x1b]0;PWNED\x07\x1b[31m.sh`) {
		t.Errorf("stdout does not show the candidate's name escaped:\n%s", out.String())
	}
}

// An out dir another assessment holds is refused with 64 before anything runs, naming the
// holder's pid.
func TestAssessRefusesAnOutDirInUse(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-assess-test.sock")
	out := t.TempDir()
	f, err := os.OpenFile(filepath.Join(out, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	f.WriteString("4242\n")
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"assess", "--store", "redis", "--recipe", "redis-setnx", "--checks", "fault-free", "--out", out}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "another assessment (pid 4242) is writing into "+out) {
		t.Errorf("exit %d, stderr %q: want 64 naming pid 4242", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(out, "runs")); err == nil {
		t.Error("a run was started in the busy out dir")
	}
}
