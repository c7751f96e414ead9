// Package scripts holds tests of the project's shell scripts.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDetachInheritsNoDescriptors: what detach.sh starts holds none of the caller's open
// descriptors: a flock the caller holds is free once the caller lets go, though the detached
// process lives on (ensure-docker.sh's dockerd held a shared flock for 14 minutes).
func TestDetachInheritsNoDescriptors(t *testing.T) {
	dir := t.TempDir()
	lockPath := filepath.Join(dir, "x.lock")
	lock, err := os.Create(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	pipeR, pipeW, err := os.Pipe() // like make's jobserver pipe
	if err != nil {
		t.Fatal(err)
	}
	defer pipeR.Close()
	defer pipeW.Close()
	cmd := exec.Command("bash", "detach.sh", filepath.Join(dir, "out.log"), "sleep", "300")
	cmd.ExtraFiles = []*os.File{lock, pipeW} // fds 3 and 4 of the caller, inheritable
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("detach.sh: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("detach.sh printed %q, not a pid", out)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	// Wait until sleep is asleep: its comm changes at the exec, but the dynamic loader then
	// still opens its libraries (a transient fd 3: seen once in CI); the process blocks in
	// nanosleep only once it has started.
	deadline := time.Now().Add(30 * time.Second)
	for {
		comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if err != nil {
			t.Fatalf("the detached process is gone: %v", err)
		}
		wchan, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/wchan")
		if strings.TrimSpace(string(comm)) == "sleep" && strings.Contains(string(wchan), "sleep") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d is still %q", pid, comm)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	var fds []string
	for _, e := range ents {
		fds = append(fds, e.Name())
	}
	if !slices.Equal(fds, []string{"0", "1", "2"}) {
		t.Fatalf("the detached process holds descriptors %v, want only 0 1 2", fds)
	}
	if sid, err := sessionID(pid); err != nil || sid != pid {
		t.Errorf("the detached process is not a session leader: sid %d (%v)", sid, err)
	}
	// The caller lets go of its lock: nobody else may still hold it.
	lock.Close()
	again, err := os.Open(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := syscall.Flock(int(again.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the caller's flock is still held after it closed it: %v", err)
	}
}

func sessionID(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid pgrp session ...
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return strconv.Atoi(f[3])
}

// TestEnsureDockerDetachesDockerd: ensure-docker.sh starts dockerd through detach.sh, never
// with a bare background job that would keep the caller's descriptors.
func TestEnsureDockerDetachesDockerd(t *testing.T) {
	b, err := os.ReadFile("ensure-docker.sh")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !regexp.MustCompile(`detach\.sh" "\$LOG" dockerd`).MatchString(s) {
		t.Fatal("ensure-docker.sh does not start dockerd through detach.sh")
	}
	if regexp.MustCompile(`(?m)^[^#]*\bdockerd\b[^\n]*&\s*$`).MatchString(s) {
		t.Fatal("ensure-docker.sh starts dockerd as a plain background job")
	}
}
