package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/workloads/resource"
)

// ResourceEnv chooses where the fenced resource runs: "host" (a child process of the
// harness, splitbrain resource, at the run network's gateway address), "container" (a
// container on the run network, reached as resource:8080) or "auto" (default: host where the
// harness shares the engine's network namespace, else container). No fault targets the
// resource, so where it runs changes no verdict; the host saves a container per run, about
// 0.6 CPU-s (docs/performance.md).
const ResourceEnv = "SPLITBRAIN_RESOURCE"

// resourcePort is the resource container's HTTP port on the run network.
const resourcePort = "8080"

// resourceStage is the running resource: a container, or a server in this process.
type resourceStage struct {
	node *platform.Node // the container; nil for the host server
	host *hostResource
	url  string // what the candidates are given (contract.EnvResourceURL)
	at   string // where it runs, for config.json and the log
}

// testHookHostResource lets a test see where a run's host resource listens.
var testHookHostResource func(netip.AddrPort)

// resourcePlace decides where the resource of a run on network nw runs, and why.
func resourcePlace(nw *platform.Network) (host bool, why string, err error) {
	switch v := os.Getenv(ResourceEnv); v {
	case "container":
		return false, ResourceEnv + "=container", nil
	case "", "auto", "host":
		ok, why := nw.HostHoldsGateway()
		if !ok && v == "host" {
			return false, "", fmt.Errorf("%s=host, but the resource cannot be served from here: %s (use %s=container or auto)", ResourceEnv, why, ResourceEnv)
		}
		return ok, why, nil
	default:
		return false, "", fmt.Errorf("%s=%q: want host, container or auto", ResourceEnv, v)
	}
}

// startResource starts the resource of run runID on network nw, in mode, logging through j:
// in this process or as a container of image (resourcePlace).
func startResource(ctx context.Context, eng *platform.Engine, runID string, nw *platform.Network, image, mode string, j *journal) (*resourceStage, error) {
	host, why, err := resourcePlace(nw)
	if err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	onLine := func(line []byte) { j.rec.ResourceLine("resource", line) }
	if host {
		binDir, err := images.SplitbrainBinDir(ctx, io.Discard)
		if err != nil {
			return nil, fmt.Errorf("resource: the splitbrain binary to serve it with: %w", err)
		}
		h, err := startHostResource(filepath.Join(binDir, "splitbrain"), nw.Gateway(), resource.Mode(mode), j.logDir(), onLine)
		if err != nil {
			return nil, fmt.Errorf("resource: %w", err)
		}
		if testHookHostResource != nil {
			testHookHostResource(h.addr)
		}
		return &resourceStage{host: h, url: "http://" + h.addr.String(), at: "a process beside the harness at " + h.addr.String()}, nil
	}
	spec := platform.NodeSpec{
		Name:         "resource",
		Role:         "resource",
		Image:        image,
		Cmd:          []string{"resource", "--addr", ":" + resourcePort, "--mode", mode},
		ExposedPorts: []string{resourcePort + "/tcp"},
		Wait:         platform.WaitHTTP(resourcePort, "/healthz", 30*time.Second),
		LogDir:       j.logDir(),
		OnStdout:     onLine,
		OnLogGap:     func(why string) { j.logGap("resource", why) },
	}
	n, err := eng.Start(ctx, runID, nw, spec)
	if err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	return &resourceStage{node: n, url: "http://resource:" + resourcePort, at: "a container on the run network (" + why + ")"}, nil
}

// stop ends the resource once no candidate runs. The host server checks that what the
// candidates wrote reached it: if they wrote and nothing arrived, a firewall on this host
// is the likely cause, and the run proved nothing.
func (s *resourceStage) stop(ctx context.Context, j *journal) error {
	if s == nil {
		return nil
	}
	if s.node != nil {
		return s.node.Terminate(ctx)
	}
	err := s.host.close(ctx)
	if msg := unreachedResource(s.host.requests.Load(), j.state.Snapshot().Counts.Writes, s.host.addr); msg != "" {
		j.harnessError("", msg)
		j.logf("WARNING: %s", msg)
	}
	return err
}

// unreachedResource is the harness error for a host resource that no request reached
// although the candidates wrote ("" when there is nothing to say).
func unreachedResource(requests, writes int64, addr netip.AddrPort) string {
	if requests > 0 || writes == 0 {
		return ""
	}
	return fmt.Sprintf("the candidates wrote %d times but no request reached the resource the harness served at %s: "+
		"a firewall on this host may drop traffic from the containers to it; run with %s=container", writes, addr, ResourceEnv)
}

// hostResource is the resource served on the run network's gateway by a child process
// (splitbrain resource --fd): the harness's own work (checkers, reports, seven runs' event
// streams, its garbage collector) once held every run's answers back 200-450 ms at the same
// instant, longer than the contract's write timeout (docs/performance.md, "The resource in a
// process of its own").
type hostResource struct {
	addr     netip.AddrPort
	cmd      *exec.Cmd
	stdin    io.WriteCloser // closing it asks the child to stop
	log      *os.File       // logs/resource.log: the decision lines, as the container's log holds them
	lines    chan error     // the stdout reader's end: nil, or why it stopped reading
	requests atomic.Int64   // decision lines received: the requests the resource answered
	once     sync.Once
	closeErr error
}

// resourceStopWait is how long a resource child may take to finish its requests in flight
// (its own shutdown gives them 2 s) and exit after stdin closes, before it is killed.
const resourceStopWait = 5 * time.Second

// startHostResource listens on gw (any port) and serves the resource from bin (a splitbrain
// binary) in a child process; every decision line goes to onLine (the history) and to
// dir/resource.log, in decision order. The child stops when the harness closes its stdin,
// also when the harness dies.
func startHostResource(bin string, gw netip.Addr, mode resource.Mode, dir string, onLine func([]byte)) (*hostResource, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log dir %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "resource.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	errLog, err := os.OpenFile(filepath.Join(dir, "resource-process.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("log file: %w", err)
	}
	defer errLog.Close() // the child has its own copy
	ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(gw, 0)))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("listen on the run network's gateway %s: %w", gw, err)
	}
	lf, err := ln.File() // a duplicate for the child; the harness's own copy closes below
	ln.Close()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("listener for the resource process: %w", err)
	}
	defer lf.Close()
	h := &hostResource{addr: netip.AddrPortFrom(gw, uint16(ln.Addr().(*net.TCPAddr).Port)), log: f, lines: make(chan error, 1)}
	// fd 3 is the first of ExtraFiles; nothing else is inherited (Go opens files close-on-exec).
	h.cmd = exec.Command(bin, "resource", "--fd", "3", "--mode", string(mode))
	h.cmd.ExtraFiles = []*os.File{lf}
	h.cmd.Stderr = errLog
	stdout, err := h.cmd.StdoutPipe()
	if err == nil {
		h.stdin, err = h.cmd.StdinPipe()
	}
	if err == nil {
		err = h.cmd.Start()
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("start the resource process %s: %w", bin, err)
	}
	sink := decisionSink{file: f, onLine: onLine}
	go func() {
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				h.requests.Add(1)
				sink.Write(line)
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				h.lines <- err
				return
			}
		}
	}()
	return h, nil
}

// close stops the child (requests in flight get 2 s, as the container's SIGTERM handling
// gives them), waits for its last decision lines and reports a lost decision log. Safe to
// call more than once.
func (h *hostResource) close(ctx context.Context) error {
	h.once.Do(func() {
		h.stdin.Close()
		waited := make(chan error, 1)
		go func() { waited <- h.cmd.Wait() }()
		var err error
		select {
		case err = <-waited:
		case <-time.After(resourceStopWait):
			h.cmd.Process.Kill()
			err = errors.Join(fmt.Errorf("still running %v after it was asked to stop: killed", resourceStopWait), <-waited)
		}
		if err != nil {
			err = fmt.Errorf("resource process (log %s): %w", filepath.Join(filepath.Dir(h.log.Name()), "resource-process.log"), err)
		}
		if rerr := <-h.lines; rerr != nil {
			err = errors.Join(err, fmt.Errorf("decision lines: %w", rerr))
		}
		h.closeErr = errors.Join(err, h.log.Close())
	})
	if h.closeErr != nil {
		return fmt.Errorf("resource at %s: %w", h.addr, h.closeErr)
	}
	return nil
}

// decisionSink receives the resource's decision lines, one whole line per Write, in the order
// the resource decided them (its stdout), so the history's order is the decision order.
type decisionSink struct {
	file   *os.File
	onLine func([]byte)
}

func (d decisionSink) Write(p []byte) (int, error) {
	_, err := d.file.Write(p)
	d.onLine(p)
	return len(p), err
}
