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

// procSafetyPoll is the candidate state poll while the engine's event stream works: only a
// safety net, since every exit arrives as a die event.
const procSafetyPoll = 2 * time.Second

// watchState is what the run knows from the engine's event stream.
type watchState struct {
	w        *platform.Watcher
	live     atomic.Bool // setup done, teardown not begun: exits are unexpected
	broken   atomic.Bool // the stream broke at least once (the poll covered the gap)
	mu       sync.Mutex
	oom      map[string]bool // container ids with an oom event since their last start
	poolRuns map[string]bool // run ids of a leased store cluster's containers
}

// startWatch subscribes to the engine's container events before anything of the run starts.
func (r *run) startWatch(ctx context.Context) error {
	r.watch.oom = map[string]bool{}
	r.watch.poolRuns = map[string]bool{}
	w, err := r.eng.Watch(context.WithoutCancel(ctx), r.onContainerEvent)
	if err != nil {
		return err
	}
	r.watch.w = w
	return nil
}

func (r *run) stopWatch() {
	r.watch.live.Store(false)
	r.watch.w.Close()
}

// addPoolRun makes the events of a leased store cluster's containers (labelled with the
// pool entry's own run id) the run's.
func (w *watchState) addPoolRun(id string) {
	w.mu.Lock()
	w.poolRuns[id] = true
	w.mu.Unlock()
}

// ours tells whether an event concerns this run's containers.
func (r *run) ours(ev platform.ContainerEvent) bool {
	if ev.RunID == r.runID {
		return true
	}
	r.watch.mu.Lock()
	defer r.watch.mu.Unlock()
	return r.watch.poolRuns[ev.RunID]
}

// onContainerEvent runs on the watcher's goroutine, in the engine's order; it must not
// block (candidate observation takes the process lock, so it runs on its own goroutine).
func (r *run) onContainerEvent(ev platform.ContainerEvent) {
	if ev.Action == platform.ActionWatchBroken {
		r.watch.broken.Store(true)
		if r.watch.live.Load() {
			r.log.harnessError("", fmt.Sprintf("Docker event stream broke (%v); reopened from its last event, process exits meanwhile come from a %v poll", ev.Err, procPollInterval))
			r.log.logf("WARNING: Docker event stream broke (%v); reopening", ev.Err)
		}
		return
	}
	if !r.ours(ev) {
		return
	}
	switch ev.Action {
	case platform.ActionStart:
		r.watch.mu.Lock()
		delete(r.watch.oom, ev.ContainerID)
		r.watch.mu.Unlock()
		return
	case platform.ActionOOM:
		r.watch.mu.Lock()
		r.watch.oom[ev.ContainerID] = true
		r.watch.mu.Unlock()
		return
	}
	live := r.watch.live.Load()
	if ev.Role == "candidate" {
		if p := r.proc(ev.Node); p != nil && ev.Action == platform.ActionDie && live {
			go r.observe(context.WithoutCancel(r.root), p, true)
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
		r.watch.mu.Lock()
		if r.watch.oom[ev.ContainerID] {
			reason += " (out of memory)"
		}
		r.watch.mu.Unlock()
	}
	r.log.record(history.Event{T: ev.T, Source: history.SourceHarness, Kind: history.KindNodeExit, Node: ev.Node, Reason: reason})
	r.log.logf("WARNING: %s %s %s at +%v", ev.Role, ev.Node, reason, r.log.sinceStart(ev.T))
}

// exitTime is when p's container exited: the engine's die event for its current run (the
// watcher's time), else the exit time in the container's state, else now (only a poll saw
// it; the reason says so).
func (r *run) exitTime(p *proc, st platform.State) (t int64, code *int, note string) {
	c := st.ExitCode
	code = &c
	if ev, ok := r.watch.w.LastDie(p.node.ID()); ok && (st.StartedAt.IsZero() || ev.WallNano >= st.StartedAt.UnixNano()) {
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
