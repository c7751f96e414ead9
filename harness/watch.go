package harness

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// The candidates' state poll: procSafetyPoll while the engine's event stream works (only a
// safety net, since every exit arrives as a die event), procPollInterval while it is or was
// broken.
const (
	procSafetyPoll   = 2 * time.Second
	procPollInterval = 200 * time.Millisecond
)

// watchState is the run's subscription to the engine's container events, from before
// anything of the run starts until teardown: exits of the run's containers (a store node's
// or the resource's is recorded as node-exit; a candidate's goes to candidateDied), and the
// exit times the candidates stage stamps process exits with.
type watchState struct {
	runID string
	log   *journal
	// candidateDied is told of a die event of candidate node while the run is live (set
	// before start).
	candidateDied func(node string)

	w        *platform.Watcher
	live     atomic.Bool // setup done, teardown not begun: exits are unexpected
	broken   atomic.Bool // the stream broke at least once (the poll covered the gap)
	mu       sync.Mutex
	oom      map[string]bool // container ids with an oom event since their last start
	poolRuns map[string]bool // run ids of a leased store cluster's containers
}

func newWatch(runID string, log *journal) *watchState {
	return &watchState{runID: runID, log: log, oom: map[string]bool{}, poolRuns: map[string]bool{}}
}

// start subscribes to the engine's container events.
func (w *watchState) start(ctx context.Context, eng *platform.Engine) error {
	sub, err := eng.Watch(context.WithoutCancel(ctx), w.onContainerEvent)
	if err != nil {
		return err
	}
	w.w = sub
	return nil
}

// setLive says whether an exit or removal of the run's containers is news: from the end of
// setup until teardown begins (which removes everything on purpose).
func (w *watchState) setLive(live bool) { w.live.Store(live) }

// degraded: the stream is not there or broke at least once, so the poll must be quick.
func (w *watchState) degraded() bool { return w.broken.Load() || w.w == nil }

func (w *watchState) stop() {
	w.live.Store(false)
	w.w.Close()
}

// addPoolRun makes the events of a leased store cluster's containers (labelled with the
// pool entry's own run id) the run's.
func (w *watchState) addPoolRun(id string) {
	w.mu.Lock()
	w.poolRuns[id] = true
	w.mu.Unlock()
}

// ours tells whether an event concerns this run's containers.
func (w *watchState) ours(ev platform.ContainerEvent) bool {
	if ev.RunID == w.runID {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.poolRuns[ev.RunID]
}

// onContainerEvent runs on the watcher's goroutine, in the engine's order; it must not
// block (candidate observation takes the process lock, so it runs on its own goroutine).
func (w *watchState) onContainerEvent(ev platform.ContainerEvent) {
	if ev.Action == platform.ActionWatchBroken {
		w.broken.Store(true)
		if w.live.Load() {
			w.log.harnessError("", fmt.Sprintf("Docker event stream broke (%v); reopened from its last event, process exits meanwhile come from a %v poll", ev.Err, procPollInterval))
			w.log.logf("WARNING: Docker event stream broke (%v); reopening", ev.Err)
		}
		return
	}
	if !w.ours(ev) {
		return
	}
	switch ev.Action {
	case platform.ActionStart:
		w.mu.Lock()
		delete(w.oom, ev.ContainerID)
		w.mu.Unlock()
		return
	case platform.ActionOOM:
		w.mu.Lock()
		w.oom[ev.ContainerID] = true
		w.mu.Unlock()
		return
	}
	live := w.live.Load()
	if ev.Role == "candidate" {
		if ev.Action == platform.ActionDie && live && w.candidateDied != nil {
			w.candidateDied(ev.Node)
		}
		if ev.Action != platform.ActionDestroy {
			return // the exit itself is the candidate's process-exit
		}
	}
	if !live || ev.Role == "tools" {
		return // nemesis sidecars come and go; setup and teardown remove nodes on purpose
	}
	reason := "container removed"
	if ev.Action == platform.ActionDie {
		reason = fmt.Sprintf("exited with code %d", ev.ExitCode)
		w.mu.Lock()
		if w.oom[ev.ContainerID] {
			reason += " (out of memory)"
		}
		w.mu.Unlock()
	}
	w.log.record(history.Event{T: ev.T, Source: history.SourceHarness, Kind: history.KindNodeExit, Node: ev.Node, Reason: reason})
	w.log.logf("WARNING: %s %s %s at +%v", ev.Role, ev.Node, reason, w.log.sinceStart(ev.T))
}

// exitTime is when a candidate's container exited: the engine's die event for its current run (the
// watcher's time), else the exit time in the container's state, else now (only a poll saw
// it; the reason says so).
func (w *watchState) exitTime(node *platform.Node, st platform.State) (t int64, code *int, note string) {
	c := st.ExitCode
	code = &c
	if ev, ok := w.w.LastDie(node.ID()); ok && (st.StartedAt.IsZero() || ev.WallNano >= st.StartedAt.UnixNano()) {
		if ev.ExitCode >= 0 {
			c = ev.ExitCode
		}
		return ev.T, code, ""
	}
	if !st.FinishedAt.IsZero() && !st.FinishedAt.Before(st.StartedAt) {
		if t := history.FromWall(st.FinishedAt.UnixNano()); t <= history.Now() {
			return t, code, ""
		}
	}
	return history.Now(), code, "exit time from a poll"
}
