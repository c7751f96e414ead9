package images

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunGoLeavesNothing: a command run by RunGo and cancelled midway (as the matrix cancels
// a background build) leaves neither its GOTMPDIR nor a child behind; a real shell stands in
// for go, writing a work file there and starting a child that would outlive it.
func TestRunGoLeavesNothing(t *testing.T) {
	state := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	script := `mkdir "$GOTMPDIR/go-build1" && echo "$GOTMPDIR" > ` + state + `/tmpdir && sleep 60 & echo $! > ` + state + `/child; wait`
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	done := make(chan error, 1)
	go func() { done <- RunGo(cmd) }()
	childFile := filepath.Join(state, "child")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(state, "tmpdir")); err == nil && len(b) > 0 {
			if _, err := os.Stat(childFile); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start its child and work directory within 10 s")
		}
		// sleep: polling the files the shell writes; no event tells a test they are there.
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunGo did not return within 10 s of the cancel")
	}
	tmpB, _ := os.ReadFile(filepath.Join(state, "tmpdir"))
	tmp := strings.TrimSpace(string(tmpB))
	if !strings.Contains(filepath.Base(tmp), "splitbrain-go-") {
		t.Fatalf("GOTMPDIR %q is not RunGo's own directory", tmp)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("GOTMPDIR %s still there after the cancel (stat: %v)", tmp, err)
	}
	childB, _ := os.ReadFile(childFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(childB)))
	if err != nil {
		t.Fatalf("child pid %q: %v", childB, err)
	}
	// The child was killed with its group; it may linger a moment as a zombie of init.
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(b), ") Z ") {
			return
		}
		// sleep: waiting for the kernel to reap the killed child; no event for another's process.
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the command's child %d outlived the cancel", pid)
}
