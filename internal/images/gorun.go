package images

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// RunGo runs a go command (made by exec.CommandContext) so that nothing of it outlives it:
// its work directory goes to a temporary directory of its own (GOTMPDIR), removed when the
// command ends, and cancelling kills its whole process group, the compilers included. A go
// killed on cancel, or interrupted, leaves its $TMPDIR/go-build* behind (20 GB had piled up
// on 2026-11-30 and filled the disk), and its compilers ran on.
func RunGo(cmd *exec.Cmd) error {
	tmp, err := os.MkdirTemp("", "splitbrain-go-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "GOTMPDIR="+tmp)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Run returns once the go command is gone even if a killed compiler's pipe is still open.
	cmd.WaitDelay = 5 * time.Second
	return cmd.Run()
}
