package platform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// NetnsEnv chooses how commands reach a container's network namespace: "sidecar" (a tools
// container sharing the namespace, as on a host where the harness is not root), or
// unset/"auto" (nsenter from the host when HostNetnsUsable, else sidecar).
const NetnsEnv = "SPLITBRAIN_NETNS"

// HostNetns runs commands in one container's network namespace from the host: nsenter
// with the host's iptables. A tools container per target cost the engine about 0.4 CPU-s to
// create, start and remove, plus each exec into it; a default tier made about 105 of them
// (docs/performance.md). It is bound to the namespace it was opened on: a restarted target
// has a new one, and Exec refuses instead of changing the wrong namespace.
type HostNetns struct {
	name  string // the target's name, for errors
	pid   int
	inode uint64 // the namespace's inode when opened
}

// OpenHostNetns binds to the network namespace of the process pid, the init of container id
// (Node.HostPID): /proc must show pid in that container's cgroup (the harness shares the
// engine's PID namespace, and the pid was not reused). It refuses the host's own namespace:
// a container with --network host would put the rules on the machine itself.
func OpenHostNetns(name, id string, pid int) (*HostNetns, error) {
	if ok, why := HostNetnsUsable(); !ok {
		return nil, fmt.Errorf("%s: cannot enter its network namespace from the host: %s", name, why)
	}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil || len(id) < 12 || !strings.Contains(string(cg), id) {
		return nil, fmt.Errorf("%s: pid %d is not in its container's cgroup here (another PID namespace, or it exited): %w", name, pid, ErrNotRunning)
	}
	ino, err := netnsInode(pid)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &HostNetns{name: name, pid: pid, inode: ino}, nil
}

// Exec runs cmd in the namespace and returns its exit code and combined output, as
// Node.Exec does in a container. The namespace file is opened and checked once, and nsenter
// enters that open file, so a pid that changed hands in between cannot be entered.
func (h *HostNetns) Exec(ctx context.Context, cmd []string) (int, string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", h.pid))
	if err != nil {
		return -1, "", fmt.Errorf("%s is not running (pid %d): %w", h.name, h.pid, ErrNotRunning)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return -1, "", fmt.Errorf("%s: network namespace: %w", h.name, err)
	}
	if st.Ino != h.inode {
		return -1, "", fmt.Errorf("%s: pid %d is in another network namespace than when it was opened (the node restarted): %w", h.name, h.pid, ErrNotRunning)
	}
	c := exec.CommandContext(ctx, "nsenter", append([]string{"--net=/proc/self/fd/3", "--"}, cmd...)...)
	c.ExtraFiles = []*os.File{f} // fd 3 in the child only
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err = c.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), nil
	case err != nil:
		return -1, out.String(), fmt.Errorf("exec %q in the network namespace of %s: %w", strings.Join(cmd, " "), h.name, err)
	}
	return 0, out.String(), nil
}

// Terminate has nothing to remove: no process outlives an Exec.
func (h *HostNetns) Terminate(context.Context) error { return nil }

func netnsInode(pid int) (uint64, error) {
	var st, self unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st); err != nil {
		return 0, fmt.Errorf("network namespace of pid %d: %w", pid, ErrNotRunning)
	}
	if err := unix.Stat("/proc/self/ns/net", &self); err != nil {
		return 0, fmt.Errorf("the host's network namespace: %w", err)
	}
	if st.Ino == self.Ino && st.Dev == self.Dev {
		return 0, fmt.Errorf("pid %d is in the host's network namespace: refusing to change it", pid)
	}
	return st.Ino, nil
}

var hostNetns struct {
	once sync.Once
	ok   bool
	why  string
}

// HostNetnsUsable says whether OpenHostNetns works here, and if not why: it needs root,
// nsenter, and an iptables on the nf_tables backend (the tools image's; a legacy iptables
// would write tables the sidecars' listing does not show). SPLITBRAIN_NETNS=sidecar turns it
// off; an unknown value is reported as the reason.
func HostNetnsUsable() (bool, string) {
	hostNetns.once.Do(func() { hostNetns.ok, hostNetns.why = hostNetnsUsable() })
	return hostNetns.ok, hostNetns.why
}

func hostNetnsUsable() (bool, string) {
	switch v := os.Getenv(NetnsEnv); v {
	case "", "auto":
	case "sidecar":
		return false, NetnsEnv + "=sidecar"
	default:
		return false, fmt.Sprintf("%s=%q is not one of auto, sidecar", NetnsEnv, v)
	}
	if os.Geteuid() != 0 {
		return false, "not root"
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return false, "no nsenter on PATH"
	}
	out, err := exec.Command("iptables", "--version").CombinedOutput()
	if err != nil {
		return false, fmt.Sprintf("iptables --version: %v", err)
	}
	if !strings.Contains(string(out), "nf_tables") {
		return false, "the host's iptables is not on the nf_tables backend: " + strings.TrimSpace(string(out))
	}
	return true, ""
}
