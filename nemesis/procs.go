package nemesis

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// procRoot is the host's /proc. The harness runs on the Docker host (as root), where every
// container process is visible with its host PID; that is how the processes of multi-process
// servers (PostgreSQL backends) are found and stopped, not only the container's PID 1.
var procRoot = "/proc"

// proc identifies one host process; start (its start time in clock ticks) guards against
// PID reuse between stop and continue.
type proc struct {
	PID   int
	Start uint64
}

// statInfo is what we read from /proc/<pid>/stat.
type statInfo struct {
	State byte
	PPID  int
	Start uint64
}

// parseStat parses a /proc/<pid>/stat line. The command name may hold spaces and
// parentheses, so fields are counted after the last ')'.
func parseStat(line string) (statInfo, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 || i+2 > len(line) {
		return statInfo{}, fmt.Errorf("malformed stat line %q", line)
	}
	f := strings.Fields(line[i+1:])
	// after the name: state(3) ppid(4) ... starttime(22) → indexes 0, 1, 19
	if len(f) < 20 || len(f[0]) != 1 {
		return statInfo{}, fmt.Errorf("malformed stat line %q", line)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return statInfo{}, fmt.Errorf("stat ppid %q: %w", f[1], err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return statInfo{}, fmt.Errorf("stat starttime %q: %w", f[19], err)
	}
	return statInfo{State: f[0][0], PPID: ppid, Start: start}, nil
}

func readStat(pid int) (statInfo, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
	if err != nil {
		return statInfo{}, err
	}
	return parseStat(string(b))
}

// processTree returns root and all its descendants (parents before children).
func processTree(root int) ([]proc, error) {
	rs, err := readStat(root)
	if err != nil {
		return nil, fmt.Errorf("read host process %d: %w (pausing needs the harness on the Docker host with access to its /proc)", root, err)
	}
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, err
	}
	children := map[int][]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		children[st.PPID] = append(children[st.PPID], proc{PID: pid, Start: st.Start})
	}
	out := []proc{{PID: root, Start: rs.Start}}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i].PID]...)
	}
	return out, nil
}

// same reports whether p is still the process we recorded (not a reused PID).
func (p proc) same() bool {
	st, err := readStat(p.PID)
	return err == nil && st.Start == p.Start
}

// sigstop stops host process pid: SIGSTOP to the process, then to each of its threads. A
// process-directed SIGSTOP wakes one thread, which starts the group stop when it next runs;
// the others run on until then, milliseconds on a loaded machine (a paused candidate stamped
// a write 3.2 ms after the pause's start, at load 14). Sent to every thread, the signal is
// pending on each and kicks the running ones, so none returns to user code without stopping.
// The SIGCONT that ends the pause clears the stops pending on every thread.
func sigstop(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	tasks, err := os.ReadDir(fmt.Sprintf("%s/%d/task", procRoot, pid))
	if err != nil {
		return nil // the process-directed stop was sent; it only takes longer
	}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			_ = syscall.Tgkill(pid, tid, syscall.SIGSTOP) // ESRCH: the thread has exited
		}
	}
	return nil
}

// stopTree SIGSTOPs root and every descendant, rescanning until no new child shows up
// (a parent may fork between the scan and its stop). It returns what it stopped.
func stopTree(root int) ([]proc, error) {
	stopped := map[int]proc{}
	var order []proc
	// PID 1 first, before the scan of the host's /proc (tens of ms on a busy host): a
	// single-process candidate stops at once, which a fault triggered by one of its events
	// needs (docs/performance.md, "Triggered faults").
	if rs, err := readStat(root); err == nil {
		if err := sigstop(root); err == nil {
			p := proc{PID: root, Start: rs.Start}
			stopped[root] = p
			order = append(order, p)
		}
	}
	for round := 0; round < 5; round++ {
		tree, err := processTree(root)
		if err != nil {
			return order, err
		}
		fresh := 0
		for _, p := range tree {
			if _, ok := stopped[p.PID]; ok {
				continue
			}
			if err := sigstop(p.PID); err != nil {
				if errors.Is(err, syscall.ESRCH) {
					continue
				}
				return order, fmt.Errorf("SIGSTOP host pid %d: %w", p.PID, err)
			}
			stopped[p.PID] = p
			order = append(order, p)
			fresh++
		}
		if fresh == 0 {
			break
		}
	}
	return order, nil
}

// waitState waits until every process reports state want ('T' stopped) or, with
// negate, until none does. It returns the offenders.
func waitState(procs []proc, want byte, negate bool, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var bad []string
		for _, p := range procs {
			st, err := readStat(p.PID)
			if err != nil || st.Start != p.Start {
				continue // gone: neither stopped nor running, nothing to check
			}
			if st.State == 'Z' || st.State == 'X' {
				continue // zombies and dead tasks take no signals and hold nothing
			}
			if (st.State == want) == negate {
				if want == 'T' && !negate && st.State == 'D' && stopPending(p.PID) {
					// In the kernel with SIGSTOP pending: it stops on its way back to user code
					// and runs none of it before, so the pause is in effect. A vfork parent
					// whose child we stopped before its exec stays in D until the SIGCONT
					// (most likely what kept etcdctl lock in D for 2 s, 2026-11-29).
					continue
				}
				bad = append(bad, fmt.Sprintf("%d=%c", p.PID, st.State))
			}
		}
		if len(bad) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if negate {
				return fmt.Errorf("host processes still in state %c after %s: %s", want, within, strings.Join(bad, " "))
			}
			return fmt.Errorf("host processes not in state %c after %s: %s", want, within, strings.Join(bad, " "))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stopPending reports whether a SIGSTOP is pending for host process pid (its own or its
// thread group's pending set, /proc/PID/status SigPnd and ShdPnd).
func stopPending(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/status", procRoot, pid))
	if err != nil {
		return false
	}
	return sigPendingIn(string(b), syscall.SIGSTOP)
}

// sigPendingIn reads a /proc/PID/status text for sig in SigPnd or ShdPnd.
func sigPendingIn(status string, sig syscall.Signal) bool {
	for _, line := range strings.Split(status, "\n") {
		name, mask, ok := strings.Cut(line, ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
		if err == nil && v&(1<<(uint(sig)-1)) != 0 {
			return true
		}
	}
	return false
}

// continueProcs SIGCONTs the processes we stopped (children first) if they still exist and
// waits until they left state T. It returns when the pause ended: the moment before the
// first SIGCONT (0 when there was none to send), so nothing of the node ran before it.
func continueProcs(procs []proc) (int64, error) {
	var errs []error
	var endT int64
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		if !p.same() {
			continue
		}
		if endT == 0 {
			endT = history.Now()
		}
		if err := syscall.Kill(p.PID, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("SIGCONT host pid %d: %w", p.PID, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return endT, err
	}
	return endT, waitState(procs, 'T', true, signalTakesEffect)
}

// signalTakesEffect bounds the wait for a SIGSTOP or SIGCONT to show in the processes'
// state. Neither can be refused or blocked, and no event tells that a task has stopped (only
// its parent or tracer could wait for it), so the state is polled and the bound only stops a
// wait for a task that will never be scheduled; in a quiet run the state changes in
// milliseconds. It is the scheduler's delay under load: 2 s was not enough at load 60
// (a candidate still in S 2 s after its SIGSTOP, make test beside a make chaos, 2026-11-29).
const signalTakesEffect = 20 * time.Second

// ProcessState returns the one-letter state of a host process (R, S, T, ...), for tests.
func ProcessState(pid int) (byte, error) {
	st, err := readStat(pid)
	return st.State, err
}
