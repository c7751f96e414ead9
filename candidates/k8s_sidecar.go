//go:build !core

package candidates

// k8s-sidecar: the leader-election sidecar pattern of Kubernetes, as two real processes in
// the candidate's container. The sidecar (`splitbrain lease-sidecar`, argv[0] "sidecar",
// k8s_sidecar_proc.go) campaigns with client-go's leaderelection on a Lease and reports on a
// loopback health endpoint whether it leads, with a fencing token. The application (this
// recipe, the container's PID 1) polls that endpoint every poll period P and writes only
// while the last answer said leader, with the token the sidecar reported. Neither process
// checks a lease deadline of its own: the sidecar believes client-go's callbacks, the
// application believes the sidecar. The gap between the sidecar losing the Lease and the
// application's last write is the stale window this recipe exists to measure
// (docs/candidates.md, k8s-sidecar; docs/performance.md).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/leaderelection"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// Steps of k8s-sidecar, each printed before the election it leads to (the recipe chaos
// test checks that), so a trigger on it can fire in that window. The sidecar prints its
// steps without a time (the harness stamps them on receipt, so the two processes' lines
// never go back in time against each other), the application the poll step. The end of a
// lease and a failed poll are log lines, not steps: they come after a term, not before one.
const (
	StepLeaseAcquired = "lease-acquired" // sidecar: client-go's OnStartedLeading
	StepLeaseRenewed  = "lease-renewed"  // sidecar: a renew of the Lease succeeded while leading
	StepPollLeader    = "poll-leader"    // application: a poll answered "leader" (its writes until the next poll rest on it)
)

// SidecarArgv0 is the sidecar process's argv[0]: the nemesis finds it by this name
// (pause:process=sidecar).
const SidecarArgv0 = "sidecar"

// SidecarCommand is the splitbrain command the sidecar process runs.
const SidecarCommand = "lease-sidecar"

// sidecarAddr is the health endpoint of a sidecar started by hand; the application picks a
// free loopback port instead and hands the listening socket to the sidecar as file
// descriptor 3 (EnvSidecarListenFD), so candidates that share a host (the recipe chaos test)
// never poll each other's sidecar.
const sidecarAddr = "127.0.0.1:7070"

// EnvSidecarListenFD, set by the application, names the inherited listening socket.
const EnvSidecarListenFD = "SPLITBRAIN_SIDECAR_LISTEN_FD"

var k8sSidecar = runtime.Spec{
	Name: "k8s-sidecar", Store: storekinds.Kubernetes,
	Summary: "leader-election sidecar: a client-go leaderelection process reports leader + token (leaseTransitions + 1) on a loopback health endpoint; the application process polls it every retry interval and writes while it says leader",
	Steps:   []string{StepLeaseAcquired, StepLeaseRenewed, StepPollLeader},
	Timing:  k8sSidecarTiming,
	New:     newK8sSidecar,
}

// sidecarParams are the sidecar's client-go durations and the application's poll period.
type sidecarParams struct {
	lease, renewDeadline, retry time.Duration
	poll, pollTimeout           time.Duration
}

// k8sSidecarParams scales client-go's 15 s / 10 s / 2 s to the run's TTL as docs/candidates.md
// section 8 advises (LeaseDuration = the TTL in whole seconds, RenewDeadline 2/3 and
// RetryPeriod 2/15 of it), with no lease proof of its own: this is the plain pattern.
// --renew-interval sets RetryPeriod; --retry-interval sets the application's poll period P
// (default TTL/4). A poll waits at most max(P, 200 ms) for its answer.
func k8sSidecarParams(c contract.Config) sidecarParams {
	lease := time.Duration(max(1, math.Ceil(c.LeaseTTL.Seconds()))) * time.Second
	retry := (lease * 2 / 15).Truncate(time.Millisecond)
	if c.RenewInterval > 0 {
		retry = c.RenewInterval
	}
	deadline := max(lease*2/3, time.Duration(float64(retry)*leaderelection.JitterFactor)+time.Millisecond).Truncate(time.Millisecond)
	poll := c.LeaseTTL / 4
	if c.RetryInterval > 0 {
		poll = c.RetryInterval
	}
	return sidecarParams{lease: lease, renewDeadline: deadline, retry: retry, poll: poll, pollTimeout: max(poll, 200*time.Millisecond)}
}

func k8sSidecarTiming(c contract.Config) runtime.Timing {
	p := k8sSidecarParams(c)
	period := p.retry + time.Duration(float64(p.retry)*leaderelection.JitterFactor)
	return runtime.Timing{TTL: p.lease, Renew: p.retry, Retry: p.poll,
		// Released lease: a waiting sidecar's next try, then its application's next poll.
		HandoffBound: period + p.poll + p.pollTimeout + 500*time.Millisecond,
		// Crash: as k8s-lease, plus the application's poll.
		FailoverBound: p.lease + 2*period + p.poll + p.pollTimeout + 500*time.Millisecond}
}

// sidecarAnswer is the health endpoint's JSON body.
type sidecarAnswer struct {
	Leader   bool   `json:"leader"`
	Token    int64  `json:"token,omitempty"`
	CallT    int64  `json:"call_t,omitempty"` // CLOCK_MONOTONIC ns when the winning acquire was sent
	Identity string `json:"identity,omitempty"`
}

// pollOutcome is one poll of the health endpoint.
type pollOutcome struct {
	answered bool // false: no answer (timeout, refused, malformed)
	answer   sidecarAnswer
	err      error
}

type k8sSidecarApp struct {
	env    runtime.Env
	p      sidecarParams
	ctx    context.Context // the process's: ends on SIGTERM
	client *http.Client
	url    string // the sidecar's health endpoint

	mu      sync.Mutex
	last    pollOutcome
	changed chan struct{} // closed and replaced on every poll outcome
	term    *sidecarTerm  // the application's current term, nil between terms
	led     int64         // the token of the last term: a new term needs a higher one

	side *sidecarProc
}

type sidecarTerm struct {
	token int64
	lost  context.CancelCauseFunc
	ended error
}

func newK8sSidecar(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
	if env.Kubeconfig == "" {
		return nil, fmt.Errorf("%s is empty: the sidecar reads the kubeconfig the harness gives kubernetes candidates (run with --store kubernetes)", contract.EnvStoreKubeconfig)
	}
	p := k8sSidecarParams(env.Config)
	if p.renewDeadline >= p.lease {
		return nil, fmt.Errorf("%s %s is too long for LeaseDuration %s: client-go needs LeaseDuration > RenewDeadline > 1.2 x RetryPeriod", contract.EnvRenewInterval, p.retry, p.lease)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable for the sidecar: %w", err)
	}
	// The application keeps the socket open for the process's life: a restarted sidecar
	// serves the same address, and while none runs, polls wait in the backlog and time out.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("health endpoint socket for the sidecar: %w", err)
	}
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		return nil, fmt.Errorf("health endpoint socket for the sidecar: %w", err)
	}
	a := newSidecarApp(ctx, env, p, "http://"+ln.Addr().String()+"/leader")
	env.Logf("k8s-sidecar: sidecar LeaseDuration %s, RenewDeadline %s, RetryPeriod %s; application polls %s every %s (timeout %s)",
		p.lease, p.renewDeadline, p.retry, ln.Addr(), p.poll, p.pollTimeout)
	a.side = startSidecar(exe, lf, env.Logf)
	go a.pollLoop()
	return a, nil
}

func newSidecarApp(ctx context.Context, env runtime.Env, p sidecarParams, url string) *k8sSidecarApp {
	return &k8sSidecarApp{env: env, p: p, ctx: ctx, url: url, changed: make(chan struct{}),
		client: &http.Client{Timeout: p.pollTimeout, Transport: &http.Transport{DisableKeepAlives: true}}}
}

// pollLoop polls the sidecar every P for the process's life.
func (a *k8sSidecarApp) pollLoop() {
	tick := time.NewTicker(a.p.poll)
	defer tick.Stop()
	for a.ctx.Err() == nil {
		a.observe(a.poll())
		select {
		case <-a.ctx.Done():
		case <-tick.C:
		}
	}
}

func (a *k8sSidecarApp) poll() pollOutcome {
	req, err := http.NewRequestWithContext(a.ctx, http.MethodGet, a.url, nil)
	if err != nil {
		return pollOutcome{err: err}
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return pollOutcome{err: err}
	}
	defer resp.Body.Close()
	var ans sidecarAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&ans); err != nil {
		return pollOutcome{err: fmt.Errorf("health endpoint answered %d with a body that is not its JSON: %w", resp.StatusCode, err)}
	}
	return pollOutcome{answered: true, answer: ans}
}

// observe records a poll and acts on it: a term ends on an answer that says "not leader" or
// names another token; a missing answer only holds the writes (Valid).
func (a *k8sSidecarApp) observe(o pollOutcome) {
	a.mu.Lock()
	prev := a.last
	a.last = o
	close(a.changed)
	a.changed = make(chan struct{})
	t := a.term
	if t != nil && o.answered && (!o.answer.Leader || o.answer.Token != t.token) {
		why := "the sidecar's health endpoint says not leader"
		if o.answer.Leader {
			why = fmt.Sprintf("the sidecar's health endpoint says leader with token %d, not %d", o.answer.Token, t.token)
		}
		t.ended = errors.New(why)
		t.lost(t.ended)
		a.term = nil
	}
	a.mu.Unlock()
	switch {
	case o.answered && o.answer.Leader:
		a.env.Step(StepPollLeader)
	case !o.answered && (prev.answered || prev.err == nil):
		a.env.Logf("k8s-sidecar: poll of the sidecar failed (writes held until it answers): %v", o.err)
	}
}

// Campaign waits for a poll that says leader with a token above the last term's: the
// sidecar's own acquisition. The same token again (after the resource fenced it) is the
// acquisition that term already had.
func (a *k8sSidecarApp) Campaign(ctx context.Context) (runtime.Term, error) {
	for {
		a.mu.Lock()
		o, ch := a.last, a.changed
		if o.answered && o.answer.Leader && o.answer.Token > a.led {
			lost, cancel := context.WithCancelCause(context.Background())
			t := &sidecarTerm{token: o.answer.Token, lost: cancel}
			a.term, a.led = t, o.answer.Token
			a.mu.Unlock()
			return runtime.Term{Token: o.answer.Token, CallT: o.answer.CallT, Lost: lost,
				Valid: func() error { return a.valid(t) }}, nil
		}
		a.mu.Unlock()
		select {
		case <-ctx.Done():
			return runtime.Term{}, ctx.Err()
		case <-ch:
		}
	}
}

// valid holds a write until the last poll answered (leader with this term's token); it
// returns at once while it does. The application's only check: it believes the sidecar.
func (a *k8sSidecarApp) valid(t *sidecarTerm) error {
	for {
		a.mu.Lock()
		o, ch, ended := a.last, a.changed, t.ended
		a.mu.Unlock()
		if ended != nil {
			return ended
		}
		if o.answered && o.answer.Leader && o.answer.Token == t.token {
			return nil
		}
		select {
		case <-a.ctx.Done():
			return errors.New(contract.ReasonSIGTERM)
		case <-ch:
		}
	}
}

// Resign does nothing: the application cannot give the Lease back, only the sidecar holds
// it (a SIGTERM of the container reaches the sidecar through Close).
func (a *k8sSidecarApp) Resign(ctx context.Context) error {
	a.mu.Lock()
	if a.term != nil {
		a.term.lost(nil)
		a.term = nil
	}
	a.mu.Unlock()
	return nil
}

// Close stops the sidecar with SIGTERM (it releases its Lease), SIGKILL if it is not gone
// within the runtime's close bound.
func (a *k8sSidecarApp) Close() error {
	if a.side == nil {
		return nil
	}
	return a.side.stop(runtime.ShutdownBound / 2 * 9 / 10)
}

// sidecarProc supervises the sidecar process as a kubelet does a container: restarted
// (after a second) whenever it exits, until stop.
type sidecarProc struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	stopped bool
	done    chan struct{} // closed when the supervisor is finished
}

func startSidecar(exe string, listener *os.File, logf func(string, ...any)) *sidecarProc {
	s := &sidecarProc{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			cmd := &exec.Cmd{Path: exe, Args: []string{SidecarArgv0, SidecarCommand},
				Env:    append(os.Environ(), EnvSidecarListenFD+"=3"),
				Stdout: os.Stdout, Stderr: os.Stderr, ExtraFiles: []*os.File{listener},
				// The sidecar dies with the application, as the containers of a Pod go together.
				SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
			s.mu.Lock()
			if s.stopped {
				s.mu.Unlock()
				return
			}
			err := cmd.Start()
			exited := make(chan struct{})
			if err == nil {
				s.cmd, s.exited = cmd, exited
			}
			s.mu.Unlock()
			if err != nil {
				logf("k8s-sidecar: start sidecar: %v", err)
			} else {
				logf("k8s-sidecar: sidecar started (pid %d)", cmd.Process.Pid)
				err = cmd.Wait()
				close(exited)
				s.mu.Lock()
				stopped := s.stopped
				s.mu.Unlock()
				if stopped {
					return
				}
				logf("k8s-sidecar: sidecar exited (%v); restarting it in 1s", err)
			}
			time.Sleep(time.Second)
		}
	}()
	return s
}

// stop sends SIGTERM and waits up to grace for the exit, then SIGKILL.
func (s *sidecarProc) stop(grace time.Duration) error {
	s.mu.Lock()
	s.stopped = true
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("sidecar did not exit within %s of SIGTERM; killed", grace)
	}
}

// sidecarStep prints a step line for the sidecar process, without a time (the harness
// stamps it on receipt).
func sidecarStep(w io.Writer, mu *sync.Mutex, name string) {
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(w, "{\"kind\":\"step\",\"name\":%q}\n", name)
}
