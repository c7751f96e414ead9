package nemesis

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envThreadsHelper makes the test binary a helper process instead: four threads, each
// blocked in a read of stdin, and the main one too.
const envThreadsHelper = "SPLITBRAIN_NEMESIS_THREADS_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(envThreadsHelper) != "" {
		for range 4 {
			go func() {
				runtime.LockOSThread() // a thread of its own, which stays
				var b [1]byte
				syscall.Read(0, b[:])
			}()
		}
		var b [1]byte
		syscall.Read(0, b[:])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestStopReachesEveryThread: a pause sends SIGSTOP to every thread of a process, not only
// to the process, so no thread runs on until the one the kernel picked gets a CPU (a paused
// candidate wrote 3.2 ms into its pause that way, at load 14). After the stop every thread
// but the one that began the group stop still has the signal pending in its own set (a
// process-directed signal leaves none there), and the SIGCONT clears them all: the process
// runs again and stays running.
func TestStopReachesEveryThread(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envThreadsHelper+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		stdin.Close()
		cmd.Wait()
	}()
	pid := cmd.Process.Pid
	var tids []int
	for deadline := time.Now().Add(time.Minute); len(tids) < 5; time.Sleep(5 * time.Millisecond) {
		if tids = threadsOf(t, pid); time.Now().After(deadline) {
			t.Fatalf("the helper has %d threads after a minute, want at least 5", len(tids))
		}
	}
	procs, err := stopTree(pid)
	if err != nil || len(procs) != 1 {
		t.Fatalf("stopTree: %v, %v", procs, err)
	}
	// Waits, not bounds: each returns as soon as its state shows.
	waitThreads(t, pid, tids, func(st byte, _ bool) bool { return st == 'T' }, "stopped")
	pending := 0
	for _, tid := range tids {
		if _, own := threadState(t, pid, tid); own {
			pending++
		}
	}
	if pending < len(tids)-1 {
		t.Errorf("%d of %d threads have SIGSTOP pending in their own set after the stop, want all but one: the others were not signalled", pending, len(tids))
	}
	if _, err := continueProcs(procs); err != nil {
		t.Fatal(err)
	}
	// With no stop pending on any thread nothing can stop the process again.
	waitThreads(t, pid, tids, func(st byte, own bool) bool { return st != 'T' && !own }, "running with no stop pending")
}

// threadsOf lists the thread ids of host process pid.
func threadsOf(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("%s/%d/task", procRoot, pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out
}

// threadState is a thread's state and whether SIGSTOP is pending in its own set (SigPnd of
// /proc/PID/task/TID/status; ShdPnd is the process's).
func threadState(t *testing.T, pid, tid int) (byte, bool) {
	t.Helper()
	dir := fmt.Sprintf("%s/%d/task/%d/", procRoot, pid, tid)
	b, err := os.ReadFile(dir + "stat")
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseStat(string(b))
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(dir + "status")
	if err != nil {
		t.Fatal(err)
	}
	own := ""
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "SigPnd:") {
			own = line
		}
	}
	return st.State, sigPendingIn(own, syscall.SIGSTOP)
}

// waitThreads waits until every thread's state satisfies ok.
func waitThreads(t *testing.T, pid int, tids []int, ok func(state byte, ownStop bool) bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		all := true
		for _, tid := range tids {
			if st, own := threadState(t, pid, tid); !ok(st, own) {
				all = false
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads of %d not %s within a minute", pid, what)
		}
	}
}
