package harness

import (
	"os"
	"os/exec"
	"testing"
)

func TestPidGone(t *testing.T) {
	if pidGone(os.Getpid()) {
		t.Fatal("this process reads as gone")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	pid := cmd.Process.Pid
	if pidGone(pid) {
		t.Fatal("a running child reads as gone")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Killed but not reaped: a zombie, which counts as gone (the shim reaps a container's).
	for !pidGone(pid) {
	}
	cmd.Wait()
	if !pidGone(pid) {
		t.Error("a reaped child reads as alive")
	}
}
