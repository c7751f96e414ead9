package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// candidateStopGrace is how long a candidate gets to resign on SIGTERM at teardown.
const candidateStopGrace = 5 * time.Second

// proc tracks one candidate's process as the harness last saw it, so process-start and
// process-exit are recorded exactly once per transition, whoever caused it (the workload,
// the nemesis, the candidate itself).
type proc struct {
	name string
	node *platform.Node

	mu      sync.Mutex // held while observing or changing the process
	running bool
	pid     int
	podUID  string        // the running process's Pod (stores.PodHost), "" = none
	exits   chan struct{} // closed, and replaced, when an exit is recorded (WaitExit waits on it)
	termAt  time.Time     // when the workload last sent this process SIGTERM; zero once it exited
}

// exitsLocked is the channel the next recorded exit closes. p.mu must be held.
func (p *proc) exitsLocked() <-chan struct{} {
	if p.exits == nil {
		p.exits = make(chan struct{})
	}
	return p.exits
}

// exitRecordedLocked wakes whoever waits for this process's exit. p.mu must be held.
func (p *proc) exitRecordedLocked() {
	p.termAt = time.Time{}
	if p.exits != nil {
		close(p.exits)
		p.exits = nil
	}
}

func (p *proc) isRunning() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// candidateProcs is the candidates stage: one host process per candidate, each in its
// container (and, on a store whose candidates live in Pods, its Pod: pods.go). It records
// every start and exit exactly once, polls behind the engine's die events, restarts and
// signals on behalf of the workload and the nemesis, and stops the candidates at teardown.
type candidateProcs struct {
	runID string
	root  context.Context // the run's: when it ends, nothing is restarted
	log   *journal
	watch *watchState // die events and exit times

	eng  *platform.Engine  // set by start
	net  *platform.Network // set by start
	pods *kubelet          // set by start; nil when candidates have no Pods

	mu       sync.Mutex
	list     []*proc
	byName   map[string]*proc
	stopPoll context.CancelFunc
	pollDone chan struct{}
	// started, when set, is told of every start of a candidate after the first (a fence's
	// power-on, a handoff's restart): the nemesis puts back the cuts its new namespace lost.
	started func(ctx context.Context, node string) error
	// starting, when set, is told just before such a start: the nemesis holds the node's
	// cuts on its peers until its own rules are back (started).
	starting func(ctx context.Context, node string) error
}

func newCandidateProcs(runID string, root context.Context, log *journal, watch *watchState) *candidateProcs {
	return &candidateProcs{runID: runID, root: root, log: log, watch: watch, byName: map[string]*proc{}}
}

// start starts the named candidates at about the same time, so none gets a head start, then
// the poll. Each process-start is recorded before its container starts, so it precedes the
// candidate's first event both in time and in the file.
func (c *candidateProcs) start(ctx context.Context, eng *platform.Engine, net *platform.Network, pods stores.PodHost,
	names []string, spec func(name string) (platform.NodeSpec, error)) error {
	c.eng, c.net, c.pods = eng, net, newKubelet(pods, c.root, c.log)
	procs := make([]*proc, len(names))
	c.mu.Lock()
	for i, name := range names {
		procs[i] = &proc{name: name}
		c.list = append(c.list, procs[i])
		c.byName[name] = procs[i]
	}
	c.mu.Unlock()
	err := platform.Each(len(procs), 0, func(i int) error {
		p := procs[i]
		p.mu.Lock()
		defer p.mu.Unlock()
		c.createPod(ctx, p)
		c.markStarting(p)
		sp, err := spec(p.name)
		if err != nil {
			c.markStartFailed(p)
			return err
		}
		n, err := c.eng.Start(ctx, c.runID, c.net, sp)
		if err != nil {
			c.markStartFailed(p)
			return fmt.Errorf("candidate %s: %w", p.name, err)
		}
		p.node = n
		c.markStarted(ctx, p)
		return nil
	})
	if err != nil {
		return err
	}
	c.startPoll()
	return nil
}

// createPod gives p's next process a new Pod (on a store with Pods). p.mu must be held.
func (c *candidateProcs) createPod(ctx context.Context, p *proc) {
	p.podUID = c.pods.create(ctx, p.name)
}

// podGone deletes the Pod of p's process that just exited. p.mu must be held.
func (c *candidateProcs) podGone(p *proc, why string) {
	uid := p.podUID
	p.podUID = ""
	c.pods.gone(p.name, uid, why)
}

// evictPod deletes the Pod of candidate node while its process keeps running (the evict
// fault); its exit then deletes nothing more.
func (c *candidateProcs) evictPod(ctx context.Context, node string) error {
	if c.pods == nil {
		return fmt.Errorf("the store has no Pods to evict")
	}
	p := c.get(node)
	if p == nil {
		return fmt.Errorf("no candidate %q", node)
	}
	p.mu.Lock()
	uid := p.podUID
	p.podUID = ""
	p.mu.Unlock()
	if uid == "" {
		return fmt.Errorf("candidate %s has no Pod (its process is not running, or was started without one)", node)
	}
	return c.pods.evict(ctx, node, uid)
}

// hasPods tells whether the candidates live in Pods (a store with Pods).
func (c *candidateProcs) hasPods() bool { return c.pods != nil }

// markStarting records process-start for a process the harness is about to start (before
// the start call, so the event precedes the process's output in time and in the file).
// p.mu must be held.
func (c *candidateProcs) markStarting(p *proc) {
	p.running, p.pid = true, 0
	c.log.record(history.Event{Source: history.SourceHarness, Kind: history.KindProcessStart, Node: p.name})
}

// markStarted notes the pid once the start call returned. p.mu must be held.
func (c *candidateProcs) markStarted(ctx context.Context, p *proc) {
	if st, err := p.node.State(ctx); err == nil {
		p.pid = st.Pid
	}
}

// markStartFailed undoes markStarting after a failed start. p.mu must be held.
func (c *candidateProcs) markStartFailed(p *proc) {
	p.running = false
	p.exitRecordedLocked()
	c.podGone(p, "start failed")
	c.log.record(history.Event{Source: history.SourceHarness, Kind: history.KindProcessExit, Node: p.name, Reason: "start failed"})
}

// recordStart records process-start for a start the harness did not make (a nemesis
// restart found by polling, or announced by the process's first output) at the kernel's
// start time of the process, so it precedes the process's first output in time. Without
// /proc access it falls back to now.
func (c *candidateProcs) recordStart(p *proc, pid int) {
	t, err := processStartMono(pid)
	if now := history.Now(); err != nil || t > now {
		t = now
	}
	c.log.record(history.Event{T: t, Source: history.SourceHarness, Kind: history.KindProcessStart, Node: p.name})
}

// beforeEvent runs before an event line of node is recorded: an event from a
// process the harness believes is not running means it was restarted (by the nemesis) and
// the poll has not seen it yet; its process-start must come first.
func (c *candidateProcs) beforeEvent(node string) {
	p := c.get(node)
	if p == nil || !p.mu.TryLock() { // locked: someone is starting or observing it right now
		return
	}
	defer p.mu.Unlock()
	if !p.running && p.node != nil {
		c.observeLocked(context.WithoutCancel(c.root), p)
	}
}

// observe reads the container state and records a transition the harness has not seen yet.
// Without block it skips a process that someone is busy with.
func (c *candidateProcs) observe(ctx context.Context, p *proc, block bool) {
	if block {
		p.mu.Lock()
	} else if !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	c.observeLocked(ctx, p)
}

func (c *candidateProcs) observeLocked(ctx context.Context, p *proc) {
	if p.node == nil {
		return // not created yet
	}
	st, err := p.node.State(ctx)
	if err != nil {
		return
	}
	switch {
	case p.running && !st.Running:
		t, code, note := c.watch.exitTime(p.node, st)
		p.running, p.pid = false, 0
		p.exitRecordedLocked()
		c.log.record(history.Event{T: t, Source: history.SourceHarness, Kind: history.KindProcessExit, Node: p.name, Exit: code, Reason: note})
		c.podGone(p, "process exited")
	case p.running && st.Pid != 0 && p.pid != 0 && st.Pid != p.pid:
		// Exited and restarted between two polls: the exit code is gone.
		c.log.record(history.Event{Source: history.SourceHarness, Kind: history.KindProcessExit, Node: p.name})
		p.exitRecordedLocked()
		c.podGone(p, "process exited and was restarted")
		p.pid = st.Pid
		c.recordStart(p, st.Pid)
	case !p.running && st.Running:
		p.running, p.pid = true, st.Pid
		c.recordStart(p, st.Pid)
	case p.running && p.pid == 0:
		p.pid = st.Pid
	}
}

// startPoll polls every candidate's state until stop: a safety net behind the engine's die
// events (every procSafetyPoll; every procPollInterval while the event stream is or was
// broken).
func (c *candidateProcs) startPoll() {
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.root))
	c.stopPoll = cancel
	c.pollDone = make(chan struct{})
	go func() {
		defer close(c.pollDone)
		for {
			every := procSafetyPoll
			if c.watch.degraded() {
				every = procPollInterval
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			for _, p := range c.all() {
				c.observe(ctx, p, false)
			}
		}
	}()
}

// restart starts an exited candidate again, unless the run is ending.
func (c *candidateProcs) restart(ctx context.Context, p *proc) error {
	if err := c.root.Err(); err != nil {
		return fmt.Errorf("not restarting %s: the run is ending (%v)", p.name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return c.startAgainLocked(ctx, p)
}

// startAgainLocked records an exit not seen yet, then starts p's container again (with a new
// Pod on a store with Pods) unless it is running. p.mu must be held.
func (c *candidateProcs) startAgainLocked(ctx context.Context, p *proc) error {
	c.observeLocked(ctx, p) // the old exit first: it also deletes the old Pod
	if p.running {
		return nil
	}
	if c.starting != nil {
		if err := c.starting(ctx, p.name); err != nil {
			c.log.harnessError("", fmt.Sprintf("a cut of %s could not be held on its peers over its restart: %v", p.name, err))
		}
	}
	c.createPod(ctx, p)
	c.markStarting(p)
	if err := p.node.Start(ctx); err != nil {
		c.markStartFailed(p)
		return fmt.Errorf("restart %s: %w", p.name, err)
	}
	c.markStarted(ctx, p)
	if c.started != nil {
		if err := c.started(ctx, p.name); err != nil {
			c.log.harnessError("", fmt.Sprintf("a cut of %s was not in effect after its restart: %v", p.name, err))
		}
	}
	return nil
}

// ensureRunning restarts candidates left down (by a workload or a fault) before
// recovery, which must show the full set electing a stable leader.
func (c *candidateProcs) ensureRunning(ctx context.Context) error {
	var errs []error
	for _, p := range c.all() {
		c.observe(ctx, p, true)
		if p.isRunning() {
			continue
		}
		c.log.logf("restarting %s before recovery", p.name)
		if err := c.restart(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopOne stops a candidate gracefully at teardown (SIGTERM, SIGKILL after the
// grace), recording the signal and the exit.
func (c *candidateProcs) stopOne(ctx context.Context, p *proc) {
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
	if left := candidateStopGrace - time.Since(p.termAt); st.Running && !p.termAt.IsZero() && left > 0 {
		// The workload's SIGTERM (a handoff) is being acted on: a second one would take the
		// signal's default action (a Go candidate, PID 1 in its container, then exits 2), and
		// the lint would blame the candidate for the harness's double signal. It gets the rest
		// of its grace to exit on the first.
		st = waitNotRunning(ctx, p.node, left)
	}
	if st.Running {
		c.log.record(history.Event{Source: history.SourceHarness, Kind: history.KindSignal, Node: p.name, Signal: "SIGTERM", Reason: "teardown"})
		p.node.Stop(ctx, candidateStopGrace)
	}
	c.observeLocked(ctx, p)
}

// waitNotRunning polls n's state until its process is not running or d has passed, and
// returns the last state read (running when it could not be read).
func waitNotRunning(ctx context.Context, n *platform.Node, d time.Duration) platform.State {
	deadline := time.Now().Add(d)
	for {
		st, err := n.State(ctx)
		if err == nil && !st.Running {
			return st
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return platform.State{Running: true}
		}
		select {
		case <-ctx.Done():
		case <-time.After(procPollInterval):
		}
	}
}

// signal sends sig to a candidate and records it.
func (c *candidateProcs) signal(ctx context.Context, node, sig, reason string) error {
	p := c.get(node)
	if p == nil || p.node == nil {
		return fmt.Errorf("no candidate %q", node)
	}
	// Once decided, the signal is sent even if ctx ends meanwhile: a half-sent signal would
	// leave a process exit the history cannot explain.
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	setTerm := func(at time.Time) {
		if sig == "SIGTERM" {
			p.mu.Lock()
			p.termAt = at
			p.mu.Unlock()
		}
	}
	setTerm(time.Now()) // before the signal: the exit it causes clears it
	t := history.Now()
	if err := p.node.Kill(kctx, sig); err != nil {
		setTerm(time.Time{})
		return err
	}
	_, err := c.log.record(history.Event{T: t, Source: history.SourceHarness, Kind: history.KindSignal, Node: node, Signal: sig, Reason: reason})
	return err
}

// get is candidate node, nil when there is none of that name.
func (c *candidateProcs) get(node string) *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byName[node]
}

// workloadEnv is the run as the workloads see it: the candidates and who leads.
type workloadEnv struct {
	cands *candidateProcs
	state *LiveState
}

func (w workloadEnv) Leader() (string, int64, bool) { return w.state.Leader() }

func (w workloadEnv) Signal(ctx context.Context, node, sig, reason string) error {
	return w.cands.signal(ctx, node, sig, reason)
}

// WaitExit returns once node's process has exited, or ctx's error.
func (w workloadEnv) WaitExit(ctx context.Context, node string) error {
	p := w.cands.get(node)
	if p == nil {
		return fmt.Errorf("no candidate %q", node)
	}
	// The engine's die event wakes it (died observes, and the exit it records closes exits);
	// the poll is the watch's own safety net, not a 50 ms inspect loop per waiting handoff.
	p.mu.Lock()
	exits := p.exitsLocked()
	p.mu.Unlock()
	for {
		w.cands.observe(ctx, p, true)
		select {
		case <-exits:
			return nil // also an exit and restart between two looks
		default:
		}
		if !p.isRunning() {
			return nil
		}
		every := procSafetyPoll
		if w.cands.watch.degraded() {
			every = procPollInterval
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exits:
			return nil
		case <-time.After(every):
		}
	}
}

func (w workloadEnv) Restart(ctx context.Context, node string) error {
	p := w.cands.get(node)
	if p == nil || p.node == nil {
		return fmt.Errorf("no candidate %q", node)
	}
	return w.cands.restart(ctx, p)
}

func (w workloadEnv) Logf(format string, args ...any) { w.cands.log.logf(format, args...) }

// all lists the candidates, in start order.
func (c *candidateProcs) all() []*proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*proc(nil), c.list...)
}

// died is the watch's news of a candidate container's die event: read its state now.
func (c *candidateProcs) died(node string) {
	if p := c.get(node); p != nil {
		go c.observe(context.WithoutCancel(c.root), p, true)
	}
}

// allExited reads every candidate's state fresh.
func (c *candidateProcs) allExited(ctx context.Context) bool {
	cands := c.all()
	if len(cands) == 0 {
		return false
	}
	for _, p := range cands {
		c.observe(ctx, p, true)
		if p.isRunning() {
			return false
		}
	}
	return true
}

// logTails formats the last lines of every candidate's log for an error message.
func (c *candidateProcs) logTails(lines int) string {
	var b strings.Builder
	for _, p := range c.all() {
		path := filepath.Join(c.log.logDir(), p.name+".log")
		fmt.Fprintf(&b, "--- %s (%s), last %d lines:\n%s\n", p.name, path, lines, tailFile(path, lines))
	}
	return b.String()
}

// stop stops the candidates gracefully at teardown, recording their exits: followers first,
// then whoever leads now (leaders, from the live state: more than one during an overlap). A
// leader that resigns while followers still run hands over, and that teardown election
// would count as one of the run's. Then the poll stops and the Pod deletions finish.
func (c *candidateProcs) stop(ctx context.Context, leaders []Tenure) {
	leading := map[string]bool{}
	for _, t := range leaders {
		leading[t.Node] = true
	}
	var followers, leads []*proc
	for _, p := range c.all() {
		if leading[p.name] {
			leads = append(leads, p)
		} else {
			followers = append(followers, p)
		}
	}
	var wg sync.WaitGroup
	for _, group := range [][]*proc{followers, leads} {
		for _, p := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.stopOne(ctx, p)
			}()
		}
		wg.Wait()
	}
	if c.stopPoll != nil {
		c.stopPoll()
		<-c.pollDone
	}
	c.pods.wait(ctx)
}

// containers are the candidates' containers, for removal at teardown.
func (c *candidateProcs) containers() []*platform.Node {
	var out []*platform.Node
	for _, p := range c.all() {
		if p.node != nil {
			out = append(out, p.node)
		}
	}
	return out
}

// tailFile returns the last n lines of a file ("(empty)" or the error when there are none).
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	text := strings.TrimRight(string(b), "\n")
	if text == "" {
		return "(empty)"
	}
	ls := strings.Split(text, "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
