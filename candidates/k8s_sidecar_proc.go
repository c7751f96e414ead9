//go:build !core

package candidates

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// RunLeaseSidecar is the k8s-sidecar recipe's sidecar process: client-go leaderelection on
// the election's Lease, and the health endpoint GET /leader (on the listening socket the
// application passed as file descriptor 3 or as the one EnvSidecarListenFD names, else on
// http://127.0.0.1:7070; sidecarListener), which
// answers 200 {"leader":true,"token":T,"call_t":...,"identity":...} between client-go's
// OnStartedLeading and OnStoppedLeading and 503 {"leader":false} otherwise. Each campaign
// has a fresh identity, so every term begins with an acquisition; the token is that
// acquisition's leaseTransitions + 1 (recordingLock), which client-go raises by one on every
// change of holder under the Lease's resourceVersion compare-and-swap, so tokens grow along
// the chain of holders. On SIGTERM (ctx) it stops the elector and releases the Lease with a
// compare-and-swap on a fresh read (k8sRelease).
func RunLeaseSidecar(ctx context.Context, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	cfg, err := contract.ParseEnv(lookup)
	if err != nil {
		return &runtime.ConfigError{Err: err}
	}
	if cfg.Store != storekinds.Kubernetes {
		return &runtime.ConfigError{Err: fmt.Errorf("the lease sidecar runs on store %s, not %q", storekinds.Kubernetes, cfg.Store)}
	}
	p := k8sSidecarParams(cfg)
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s %s sidecar: %s\n", time.Now().Format("15:04:05.000"), cfg.NodeID, fmt.Sprintf(format, args...))
	}
	cs, err := k8sClient(runtime.Env{Config: cfg, Timing: runtime.Timing{TTL: p.lease}})
	if err != nil {
		return &runtime.ConfigError{Err: err}
	}
	ln, err := sidecarListener(lookup)
	if err != nil {
		return fmt.Errorf("health endpoint: %w", err)
	}
	s := &leaseSidecar{stdout: stdout}
	srv := &http.Server{Handler: http.HandlerFunc(s.serveLeader), ReadHeaderTimeout: 2 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	logf("LeaseDuration %s, RenewDeadline %s, RetryPeriod %s; health endpoint http://%s/leader", p.lease, p.renewDeadline, p.retry, ln.Addr())

	name := k8sObjectName(cfg.ElectionName)
	for ctx.Err() == nil {
		var rnd [4]byte
		rand.Read(rnd[:])
		lease := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: contract.KubeNamespace},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.NodeID + "_" + hex.EncodeToString(rnd[:])},
		}
		c := &sidecarCampaign{}
		lock := &recordingLock{Interface: lease, renewed: func(time.Time) { s.renewed(c) }}
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: p.lease, RenewDeadline: p.renewDeadline, RetryPeriod: p.retry, Name: name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					tr, callT, ok := lock.acquired()
					if !ok {
						logf("client-go reports leading but no acquiring write of ours was seen; not reporting leader")
						return
					}
					if s.start(c, sidecarAnswer{Leader: true, Token: int64(tr) + 1, CallT: callT, Identity: lease.Identity()}) {
						logf("leading as %s with token %d", lease.Identity(), tr+1)
					}
				},
				// client-go calls it when RunOrDie ends, led or not, and may call it before
				// OnStartedLeading's goroutine ran: the campaign is then over for both.
				OnStoppedLeading: func() {
					if s.stop(c) {
						logf("stopped leading (OnStoppedLeading)")
					}
				},
			},
		})
		if ctx.Err() != nil {
			rctx, cancel := context.WithTimeout(context.Background(), runtime.ShutdownBound/3)
			err := k8sRelease(rctx, lease)
			cancel()
			if err != nil {
				logf("release of %s: %v", name, err)
			}
		}
	}
	return nil
}

// sidecarListener is the socket the application passed: the descriptor EnvSidecarListenFD
// names (the recipe's application sets it), else file descriptor 3 when that is a listening
// socket (an application that passes fd 3 without the variable), else a fresh listener on
// sidecarAddr for a sidecar started by hand.
func sidecarListener(lookup func(string) (string, bool)) (net.Listener, error) {
	v, ok := lookup(EnvSidecarListenFD)
	if !ok {
		if ln := inheritedListener(3); ln != nil {
			return ln, nil
		}
		return net.Listen("tcp", sidecarAddr)
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: want an inherited file descriptor number >= 3", EnvSidecarListenFD, v)
	}
	f := os.NewFile(uintptr(fd), "health-endpoint")
	defer f.Close() // FileListener keeps its own duplicate
	return net.FileListener(f)
}

// inheritedListener is a listener on fd when fd is a listening socket (SO_ACCEPTCONN), else
// nil. A descriptor that is anything else (closed, a file, a pipe, an unconnected or connected
// socket) is left open and untouched: the probe reads it with getsockopt only and wraps it in
// an *os.File (whose finalizer would close it) only once it is known to be a listener.
func inheritedListener(fd int) net.Listener {
	if on, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN); err != nil || on != 1 {
		return nil
	}
	f := os.NewFile(uintptr(fd), "health-endpoint")
	defer f.Close() // FileListener keeps its own duplicate
	ln, err := net.FileListener(f)
	if err != nil {
		return nil
	}
	return ln
}

// sidecarCampaign is one RunOrDie: once stopped it never reports leader again.
type sidecarCampaign struct{ stopped bool }

type leaseSidecar struct {
	stdout io.Writer
	outMu  sync.Mutex

	mu  sync.Mutex
	cur *sidecarCampaign
	ans sidecarAnswer
}

func (s *leaseSidecar) start(c *sidecarCampaign, ans sidecarAnswer) bool {
	s.mu.Lock()
	if c.stopped {
		s.mu.Unlock()
		return false
	}
	s.cur, s.ans = c, ans
	s.mu.Unlock()
	sidecarStep(s.stdout, &s.outMu, StepLeaseAcquired)
	return true
}

// renewed prints lease-renewed for a successful renew while c leads (the acquiring write
// comes before OnStartedLeading and is lease-acquired). client-go sleeps RetryPeriod after
// it before the next renew round: a fault triggered on it lands in that sleep.
func (s *leaseSidecar) renewed(c *sidecarCampaign) {
	s.mu.Lock()
	led := s.cur == c
	s.mu.Unlock()
	if led {
		sidecarStep(s.stdout, &s.outMu, StepLeaseRenewed)
	}
}

func (s *leaseSidecar) stop(c *sidecarCampaign) bool {
	s.mu.Lock()
	c.stopped = true
	led := s.cur == c
	if led {
		s.cur, s.ans = nil, sidecarAnswer{}
	}
	s.mu.Unlock()
	return led
}

func (s *leaseSidecar) serveLeader(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/leader" {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	ans := s.ans
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !ans.Leader {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(ans)
}
