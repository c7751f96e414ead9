package nemesis

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// The watch closes once every stopped process has exited (killed while stopped, still a
// zombie of this test), and not while one of them remains.
func TestExitWatchRealProcesses(t *testing.T) {
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	a, b := start(), start()
	var procs []proc
	for _, c := range []*exec.Cmd{a, b} {
		got, err := stopTree(c.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, got...)
	}
	if err := waitState(procs, 'T', false, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	w := watchExits(procs)
	if w == nil {
		t.Fatal("no exit watch on this kernel (pidfd_open failed)")
	}
	defer w.stop()
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.Wait() // a has exited and is reaped; b still stands
	select {
	case <-w.done():
		t.Fatal("the watch ended with one stopped process still there")
	default:
	}
	if err := syscall.Kill(b.Process.Pid, syscall.SIGKILL); err != nil { // b stays a zombie
		t.Fatal(err)
	}
	select {
	case <-w.done():
	case <-time.After(30 * time.Second):
		t.Fatal("every stopped process exited, and the watch did not say so within 30 s")
	}
}

// A stopped watch never reports, even when its processes exit afterwards.
func TestExitWatchStopped(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	w := watchExits([]proc{{PID: cmd.Process.Pid, Start: mustStart(t, cmd.Process.Pid)}})
	if w == nil {
		t.Fatal("no exit watch on this kernel (pidfd_open failed)")
	}
	w.stop()
	cmd.Process.Kill()
	cmd.Wait()
	// sleep: no event says a closed watch has nothing left to report; 200 ms is many times
	// the poller's wake-up, so a watch that still reported would be seen.
	time.Sleep(200 * time.Millisecond)
	select {
	case <-w.done():
		t.Fatal("a stopped watch reported an exit")
	default:
	}
}

func mustStart(t *testing.T, pid int) uint64 {
	t.Helper()
	st, err := readStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	return st.Start
}
