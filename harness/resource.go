package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/workloads/resource"
)

// ResourceEnv chooses where the fenced resource runs: "host" (a server in the harness's
// process, at the run network's gateway address), "container" (a container on the run
// network, reached as resource:8080) or "auto" (default: host where the harness shares the
// engine's network namespace, else container). No fault targets the resource, so where it
// runs changes no verdict; the host saves a container per run, about 0.6 CPU-s
// (docs/performance.md).
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
		h, err := startHostResource(nw.Gateway(), resource.Mode(mode), j.logDir(), onLine)
		if err != nil {
			return nil, fmt.Errorf("resource: %w", err)
		}
		if testHookHostResource != nil {
			testHookHostResource(h.addr)
		}
		return &resourceStage{host: h, url: "http://" + h.addr.String(), at: "the harness's process at " + h.addr.String()}, nil
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

// hostResource is the resource served by this process on the run network's gateway.
type hostResource struct {
	addr     netip.AddrPort
	srv      *resource.Server
	hs       *http.Server
	log      *os.File // logs/resource.log: the decision lines, as the container's log holds them
	served   chan error
	requests atomic.Int64
	once     sync.Once
	closeErr error
}

// startHostResource listens on gw (any port) and serves the resource; every decision line
// goes to onLine (the history) and to dir/resource.log, in decision order.
func startHostResource(gw netip.Addr, mode resource.Mode, dir string, onLine func([]byte)) (*hostResource, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log dir %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "resource.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gw.String(), "0"))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("listen on the run network's gateway %s: %w", gw, err)
	}
	h := &hostResource{addr: netip.AddrPortFrom(gw, uint16(ln.Addr().(*net.TCPAddr).Port)), log: f, served: make(chan error, 1)}
	h.srv = resource.New(mode, decisionSink{file: f, onLine: onLine})
	api := h.srv.Handler()
	h.hs = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			h.requests.Add(1)
			api.ServeHTTP(w, req)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { h.served <- h.hs.Serve(ln) }()
	return h, nil
}

// close stops serving (requests in flight get 2 s, as the container's SIGTERM handling
// gives them) and reports a lost decision log. Safe to call more than once.
func (h *hostResource) close(ctx context.Context) error {
	h.once.Do(func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		err := h.hs.Shutdown(sctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = h.hs.Close()
		}
		if serr := <-h.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		if lerr := h.srv.LogErr(); lerr != nil {
			err = errors.Join(err, fmt.Errorf("decision log: %w", lerr))
		}
		h.closeErr = errors.Join(err, h.log.Close())
	})
	if h.closeErr != nil {
		return fmt.Errorf("resource at %s: %w", h.addr, h.closeErr)
	}
	return nil
}

// decisionSink receives the resource's decision lines: one whole line per Write, under the
// resource's lock, so the history's order is the decision order.
type decisionSink struct {
	file   *os.File
	onLine func([]byte)
}

func (d decisionSink) Write(p []byte) (int, error) {
	_, err := d.file.Write(p)
	d.onLine(p)
	return len(p), err
}
