package harness

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/fence"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// fenceDevice is the run's fence device (internal/fence), part of the fault stage: opened
// on first use by candidateSpec and closed at teardown.
type fenceDevice struct {
	net   *platform.Network
	cands *candidateProcs
	log   *journal
	names []string
	root  context.Context // the run's: an interrupt closes the device at once

	once    sync.Once
	dev     *fence.Device
	url     string
	unwatch func() bool // stops the interrupt watch (context.AfterFunc)

	mu  sync.Mutex
	ips map[netip.Addr]string // candidate addresses seen on the run network, kept after restarts
}

// fenceConfirmWithin bounds the wait for a killed candidate's container to be reported
// stopped; a power-off not confirmed by then fails.
const fenceConfirmWithin = 10 * time.Second

// URL opens the device on first call and returns the URL candidates use, "" when the run
// has none. The device listens on the run network's gateway address (the host's side of
// the run's bridge): candidates reach it over the run's own network, nothing else is
// exposed, and it answers only addresses of the run's candidates.
func (fd *fenceDevice) URL() string {
	if fd == nil {
		return ""
	}
	fd.once.Do(func() {
		if fd.net == nil || !fd.net.Subnet.IsValid() {
			return
		}
		gw := fd.net.Gateway()
		ln, err := net.Listen("tcp", netip.AddrPortFrom(gw, 0).String())
		if err != nil {
			// A remote or desktop engine: the run network's gateway is not on this host.
			fd.log.logf("no fence device: cannot listen on the run network's gateway %s: %v", gw, err)
			return
		}
		fd.dev = fence.New(fd.names, runPower{fd}, fd.log.record, fd.log.logf)
		fd.dev.Serve(ln)
		if fd.root != nil {
			// An interrupt drops what fence faults hold instead of waiting it out in their
			// heals: the run is unknown anyway, and the exit must be prompt.
			fd.unwatch = context.AfterFunc(fd.root, fd.dev.Close)
		}
		fd.url = "http://" + ln.Addr().String()
		fd.log.logf("fence device on %s (the run's candidates only)", fd.url)
	})
	return fd.url
}

// fenceURL is the device's URL for candidateSpec ("" before the fault stage exists).
func (f *faultEnv) fenceURL() string {
	if f == nil {
		return ""
	}
	return f.fence.URL()
}

// close stops the device (teardown); pending late power-offs are dropped.
func (fd *fenceDevice) close() {
	if fd != nil && fd.dev != nil {
		if fd.unwatch != nil {
			fd.unwatch()
		}
		fd.dev.Close()
	}
}

// FenceDevice gives the fence fault kinds the device (nemesis.FenceEnv).
func (n nemesisEnv) FenceDevice() nemesis.FenceDevice {
	if n.f.fence == nil || n.f.fence.dev == nil {
		return nil
	}
	return n.f.fence.dev
}

// runPower switches the run's candidate containers for the fence device.
type runPower struct{ fd *fenceDevice }

func (rp runPower) proc(node string) (*proc, error) {
	p := rp.fd.cands.get(node)
	if p == nil || p.node == nil {
		return nil, fmt.Errorf("%s: %w", node, fence.ErrNoNode)
	}
	return p, nil
}

// Off SIGKILLs the candidate's process and returns once the engine reports its container
// stopped, recording the kill (a signal event: it ends the node's tenure) and the exit.
func (rp runPower) Off(ctx context.Context, node, by string, id int) error {
	p, err := rp.proc(node)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st, err := p.node.State(ctx)
	if err != nil {
		return fmt.Errorf("power state of %s: %w", node, err)
	}
	if st.Running {
		// kill(2) of the host PID works on a stopped process and is in effect when it
		// returns; the engine's kill (no /proc view of it) only once the daemon saw it. A
		// node frozen by the cgroup v1 freezer (freeze) holds the kill pending until it is
		// thawed: a power switch does not wait for that, so the node is thawed right after
		// the kill (the pending SIGKILL is taken before any of its code runs again).
		viaPID := false
		if st.Pid > 1 && pidOfContainer(st.Pid, p.node.ID()) {
			viaPID = syscall.Kill(st.Pid, syscall.SIGKILL) == nil
		}
		thawed := false
		if st.Paused && viaPID {
			if err := p.node.Thaw(ctx); err != nil {
				return fmt.Errorf("power off %s (frozen): %w", node, err)
			}
			thawed = true
		}
		if !viaPID {
			if st.Paused { // the engine refuses to signal a paused container
				if err := p.node.Thaw(ctx); err != nil {
					return fmt.Errorf("power off %s (frozen): %w", node, err)
				}
				thawed = true
			}
			if err := p.node.Kill(ctx, "SIGKILL"); err != nil {
				return fmt.Errorf("power off %s: %w", node, err)
			}
		}
		reason := fmt.Sprintf("fence %d: power off", id)
		if by != "" {
			reason += " requested by " + by
		}
		if thawed {
			reason += " (it was frozen: thawed so the kill took effect)"
		}
		rp.fd.log.record(history.Event{Source: history.SourceHarness, Kind: history.KindSignal, Node: node, Signal: "SIGKILL", Reason: reason})
		// Confirmed by the kernel when the PID was killed: the engine's state can lag by
		// seconds on a loaded machine (measured up to 6 s while a partition's rules were on
		// the node), and a power switch answers when the power is off, not when the
		// inventory says so. The exit is recorded by the engine's die event or the poll.
		deadline := time.Now().Add(fenceConfirmWithin)
		for {
			if viaPID {
				if pidGone(st.Pid) {
					return nil
				}
			} else if st, err = p.node.State(ctx); err == nil && !st.Running {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("power off %s: still running %s after SIGKILL (%v)", node, fenceConfirmWithin, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	rp.fd.cands.observeLocked(ctx, p) // the exit, once
	return nil
}

// On starts the candidate again (a new process, as after a power cycle).
func (rp runPower) On(ctx context.Context, node string) error {
	p, err := rp.proc(node)
	if err != nil {
		return err
	}
	return rp.fd.cands.restart(ctx, p)
}

func (rp runPower) PoweredOn(ctx context.Context, node string) (bool, error) {
	p, err := rp.proc(node)
	if err != nil {
		return false, err
	}
	st, err := p.node.State(ctx)
	return st.Running, err
}

// Requester names the candidate whose address on the run network addr is (or was).
func (rp runPower) Requester(ctx context.Context, addr netip.Addr) (string, bool) {
	fd := rp.fd
	if fd.net == nil || !fd.net.Subnet.Contains(addr) {
		return "", false
	}
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if name, ok := fd.ips[addr]; ok {
		return name, true
	}
	if fd.ips == nil {
		fd.ips = map[netip.Addr]string{}
	}
	if fd.cands == nil {
		return "", false
	}
	for _, p := range fd.cands.all() {
		if p.node == nil {
			continue
		}
		ip, err := p.node.IP(ctx)
		if err != nil {
			continue
		}
		if a, err := netip.ParseAddr(ip); err == nil {
			fd.ips[a] = p.name
		}
	}
	name, ok := fd.ips[addr]
	return name, ok
}

// pidOfContainer reports whether host pid belongs to the container with the given id.
func pidOfContainer(pid int, id string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return err == nil && len(id) >= 12 && strings.Contains(string(b), id)
}

// pidGone reports whether host pid has ended: no such process, or a zombie or dead task
// (killed, not yet reaped by the container's shim).
func pidGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	switch b[i+2] {
	case 'Z', 'X', 'x':
		return true
	}
	return false
}
