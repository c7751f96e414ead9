package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// proc tracks one candidate's process as the harness last saw it, so process-start and
// process-exit are recorded exactly once per transition, whoever caused it (the workload,
// the nemesis, the candidate itself).
type proc struct {
	name string
	node *platform.Node

	mu      sync.Mutex // held while observing or changing the process
	running bool
	pid     int
	podUID  string // the running process's Pod (stores.PodHost), "" = none
}

func (p *proc) isRunning() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// markStarting records process-start for a process the harness is about to start (before
// the start call, so the event precedes the process's output in time and in the file).
// p.mu must be held.
func (r *run) markStarting(p *proc) {
	p.running, p.pid = true, 0
	r.log.record(history.Event{Source: history.SourceHarness, Kind: history.KindProcessStart, Node: p.name})
}

// markStarted notes the pid once the start call returned. p.mu must be held.
func (r *run) markStarted(ctx context.Context, p *proc) {
	if st, err := p.node.State(ctx); err == nil {
		p.pid = st.Pid
	}
}

// markStartFailed undoes markStarting after a failed start. p.mu must be held.
func (r *run) markStartFailed(p *proc) {
	p.running = false
	r.podGone(p, "start failed")
	r.log.record(history.Event{Source: history.SourceHarness, Kind: history.KindProcessExit, Node: p.name, Reason: "start failed"})
}

// recordStart records process-start for a start the harness did not make (a nemesis
// restart found by polling, or announced by the process's first output) at the kernel's
// start time of the process, so it precedes the process's first output in time. Without
// /proc access it falls back to now.
func (r *run) recordStart(p *proc, pid int) {
	t, err := processStartMono(pid)
	if now := history.Now(); err != nil || t > now {
		t = now
	}
	r.log.record(history.Event{T: t, Source: history.SourceHarness, Kind: history.KindProcessStart, Node: p.name})
}

// beforeCandidateEvent runs before an event line of node is recorded: an event from a
// process the harness believes is not running means it was restarted (by the nemesis) and
// the poll has not seen it yet; its process-start must come first.
func (r *run) beforeCandidateEvent(node string) {
	p := r.proc(node)
	if p == nil || !p.mu.TryLock() { // locked: someone is starting or observing it right now
		return
	}
	defer p.mu.Unlock()
	if !p.running && p.node != nil {
		r.observeLocked(context.WithoutCancel(r.root), p)
	}
}

// observe reads the container state and records a transition the harness has not seen yet.
// Without block it skips a process that someone is busy with.
func (r *run) observe(ctx context.Context, p *proc, block bool) {
	if block {
		p.mu.Lock()
	} else if !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	r.observeLocked(ctx, p)
}

func (r *run) observeLocked(ctx context.Context, p *proc) {
	if p.node == nil {
		return // not created yet
	}
	st, err := p.node.State(ctx)
	if err != nil {
		return
	}
	switch {
	case p.running && !st.Running:
		t, code, note := r.exitTime(p, st)
		p.running, p.pid = false, 0
		r.log.record(history.Event{T: t, Source: history.SourceHarness, Kind: history.KindProcessExit, Node: p.name, Exit: code, Reason: note})
		r.podGone(p, "process exited")
	case p.running && st.Pid != 0 && p.pid != 0 && st.Pid != p.pid:
		// Exited and restarted between two polls: the exit code is gone.
		r.log.record(history.Event{Source: history.SourceHarness, Kind: history.KindProcessExit, Node: p.name})
		r.podGone(p, "process exited and was restarted")
		p.pid = st.Pid
		r.recordStart(p, st.Pid)
	case !p.running && st.Running:
		p.running, p.pid = true, st.Pid
		r.recordStart(p, st.Pid)
	case p.running && p.pid == 0:
		p.pid = st.Pid
	}
}

// startProcMonitor polls every candidate's state until teardown: a safety net behind the
// engine's die events (every procSafetyPoll; every procPollInterval while the event stream
// is or was broken).
func (r *run) startProcMonitor() {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.root))
	r.stopProcs = cancel
	r.procsDone = make(chan struct{})
	go func() {
		defer close(r.procsDone)
		for {
			every := procSafetyPoll
			if r.watch.broken.Load() || r.watch.w == nil {
				every = procPollInterval
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			for _, p := range r.candidates() {
				r.observe(ctx, p, false)
			}
		}
	}()
}

// restartCandidate starts an exited candidate again, unless the run is ending.
func (r *run) restartCandidate(ctx context.Context, p *proc) error {
	if err := r.root.Err(); err != nil {
		return fmt.Errorf("not restarting %s: the run is ending (%v)", p.name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return r.startAgainLocked(ctx, p)
}

// startAgainLocked records an exit not seen yet, then starts p's container again (with a new
// Pod on a store with Pods) unless it is running. p.mu must be held.
func (r *run) startAgainLocked(ctx context.Context, p *proc) error {
	r.observeLocked(ctx, p) // the old exit first: it also deletes the old Pod
	if p.running {
		return nil
	}
	r.createPod(ctx, p)
	r.markStarting(p)
	if err := p.node.Start(ctx); err != nil {
		r.markStartFailed(p)
		return fmt.Errorf("restart %s: %w", p.name, err)
	}
	r.markStarted(ctx, p)
	return nil
}

// ensureCandidatesRunning restarts candidates left down (by a workload or a fault) before
// recovery, which must show the full set electing a stable leader.
func (r *run) ensureCandidatesRunning(ctx context.Context) error {
	var errs []error
	for _, p := range r.candidates() {
		r.observe(ctx, p, true)
		if p.isRunning() {
			continue
		}
		r.log.logf("restarting %s before recovery", p.name)
		if err := r.restartCandidate(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopCandidate stops a candidate gracefully at teardown (SIGTERM, SIGKILL after the
// grace), recording the signal and the exit.
func (r *run) stopCandidate(ctx context.Context, p *proc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.node == nil {
		return
	}
	st, err := p.node.State(ctx)
	if err != nil {
		return
	}
	if st.Paused {
		p.node.Thaw(ctx) // a frozen process cannot act on SIGTERM
	}
	if st.Running {
		r.log.record(history.Event{Source: history.SourceHarness, Kind: history.KindSignal, Node: p.name, Signal: "SIGTERM", Reason: "teardown"})
		p.node.Stop(ctx, candidateStopGrace)
	}
	r.observeLocked(ctx, p)
}

// signal sends sig to a candidate and records it.
func (r *run) signal(ctx context.Context, node, sig, reason string) error {
	p := r.proc(node)
	if p == nil || p.node == nil {
		return fmt.Errorf("no candidate %q", node)
	}
	// Once decided, the signal is sent even if ctx ends meanwhile: a half-sent signal would
	// leave a process exit the history cannot explain.
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	t := history.Now()
	if err := p.node.Kill(kctx, sig); err != nil {
		return err
	}
	_, err := r.log.record(history.Event{T: t, Source: history.SourceHarness, Kind: history.KindSignal, Node: node, Signal: sig, Reason: reason})
	return err
}

func (r *run) proc(node string) *proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byName[node]
}

// workloadEnv is the run as the workloads see it.
type workloadEnv struct{ r *run }

func (w workloadEnv) Leader() (string, int64, bool) { return w.r.log.state.Leader() }

func (w workloadEnv) Signal(ctx context.Context, node, sig, reason string) error {
	return w.r.signal(ctx, node, sig, reason)
}

func (w workloadEnv) WaitExit(ctx context.Context, node string) error {
	p := w.r.proc(node)
	if p == nil {
		return fmt.Errorf("no candidate %q", node)
	}
	for {
		w.r.observe(ctx, p, true)
		if !p.isRunning() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (w workloadEnv) Restart(ctx context.Context, node string) error {
	p := w.r.proc(node)
	if p == nil || p.node == nil {
		return fmt.Errorf("no candidate %q", node)
	}
	return w.r.restartCandidate(ctx, p)
}

func (w workloadEnv) Logf(format string, args ...any) { w.r.log.logf(format, args...) }

// logGap records that node's output may be missing from the history, and says so.
func (r *run) logGap(node, why string) {
	r.log.harnessError("", fmt.Sprintf("output of %s may be missing from the history: %s", node, why))
	r.log.logf("WARNING: output of %s may be missing: %s", node, why)
}
