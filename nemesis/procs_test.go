package nemesis

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	line := "1234 (post gres: (wal) writer) S 1200 1234 1234 0 -1 4194368 120 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615"
	st, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != 'S' || st.PPID != 1200 || st.Start != 987654 {
		t.Fatalf("%+v", st)
	}
	for _, bad := range []string{"", "12 (x", "12 (x) S 1"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A real process tree on this host: stop it, see state T everywhere, continue it.
func TestStopTreeReal(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the cleanup kills the sleeps too
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	// Wait until sh has forked both sleeps.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if tree, err := processTree(cmd.Process.Pid); err == nil && len(tree) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sh did not start its two sleeps within a minute")
		}
	}
	procs, err := stopTree(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) != 3 {
		t.Fatalf("want sh + 2 sleeps, stopped %v", procs)
	}
	// A wait, not a bound: it returns as soon as every process shows T.
	if err := waitState(procs, 'T', false, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := continueProcs(procs); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if s, _ := ProcessState(p.PID); s == 'T' {
			t.Fatalf("pid %d still stopped", p.PID)
		}
	}
	if _, err := processTree(1 << 30); err == nil {
		t.Fatal("missing pid accepted")
	}
	_ = os.Getpid()
}

// A process in the kernel (state D) with SIGSTOP pending counts as paused: the masks of
// /proc/PID/status name it (SIGSTOP is signal 19, bit 18).
func TestSigPendingIn(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   bool
	}{
		{"Name:\tetcdctl\nState:\tD (disk sleep)\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000040000\n", true},
		{"SigPnd:\t0000000000040000\nShdPnd:\t0000000000000000\n", true},
		{"SigPnd:\t0000000000000000\nShdPnd:\t0000000000004000\n", false}, // SIGTERM only
		{"State:\tD (disk sleep)\n", false},
	} {
		if got := sigPendingIn(tc.status, syscall.SIGSTOP); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.status, got, tc.want)
		}
	}
}
