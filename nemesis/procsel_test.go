package nemesis

import (
	"os/exec"
	"testing"
	"time"
)

// A real tree on this host, bash with two children, one of them with argv[0] "sidecar":
// process=sidecar stops that one alone, process=app bash alone.
func TestStopSelectedReal(t *testing.T) {
	cmd := exec.Command("bash", "-c", "(exec -a sidecar sleep 30) & sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Skipf("bash: %v", err)
	}
	defer cmd.Process.Kill()
	root := cmd.Process.Pid
	var tree []proc
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		var err error
		if tree, err = processTree(root); err == nil && len(tree) == 3 && (argv0(tree[1].PID) == "sidecar" || argv0(tree[2].PID) == "sidecar") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bash did not start its sidecar and its other child within a minute")
		}
	}
	defer continueProcs(tree)
	stateOf := func(pid int) byte {
		s, err := ProcessState(pid)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		sel  string
		want func(p proc) bool // stopped?
	}{
		{ProcessSidecar, func(p proc) bool { return argv0(p.PID) == "sidecar" }},
		{ProcessApp, func(p proc) bool { return p.PID == root }},
	} {
		procs, err := stopSelected(root, c.sel)
		if err != nil {
			t.Fatalf("process=%s: %v", c.sel, err)
		}
		if len(procs) != 1 || !c.want(procs[0]) {
			t.Fatalf("process=%s stopped %v", c.sel, procs)
		}
		if err := waitState(procs, 'T', false, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		for _, p := range tree {
			if stopped := stateOf(p.PID) == 'T'; stopped != c.want(p) {
				t.Fatalf("process=%s: pid %d (argv[0] %q) stopped=%v", c.sel, p.PID, argv0(p.PID), stopped)
			}
		}
		if _, err := continueProcs(procs); err != nil {
			t.Fatal(err)
		}
	}
	// A tree without a sidecar: refused with the reason.
	other := tree[1]
	if argv0(other.PID) == "sidecar" {
		other = tree[2]
	}
	if procs, err := stopSelected(other.PID, ProcessSidecar); err == nil {
		continueProcs(procs)
		t.Fatalf("process=sidecar on a process without one stopped %v", procs)
	}
}
