package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// Container lifecycle actions the watcher reports.
const (
	ActionStart   = "start"
	ActionDie     = "die"
	ActionOOM     = "oom"
	ActionDestroy = "destroy"
	// ActionWatchBroken is reported (with Err) when the engine's event stream broke; the
	// watcher reopens it from the last event's time, so nothing in between is missed unless
	// reopening fails too.
	ActionWatchBroken = "watch-broken"
)

// ContainerEvent is one lifecycle event of a project container, from the engine's stream.
type ContainerEvent struct {
	Action      string
	ContainerID string
	RunID       string // io.splitbrain.run label
	Node        string // io.splitbrain.node label
	Role        string // io.splitbrain.role label
	ExitCode    int    // die: the exit code (-1 when the engine gave none)
	WallNano    int64  // the engine's timestamp (timeNano, wall clock)
	T           int64  // the same instant on CLOCK_MONOTONIC (history.FromWall)
	Err         error  // watch-broken only
}

// Watcher follows the engine's container events for project containers.
type Watcher struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	lastDie map[string]ContainerEvent // newest die per container id
}

// watch is Engine.Watch's work.
func watch(ctx context.Context, e *Engine, fn func(ContainerEvent)) (*Watcher, error) {
	wctx, cancel := context.WithCancel(ctx)
	w := &Watcher{cancel: cancel, done: make(chan struct{}), lastDie: map[string]ContainerEvent{}}
	filters := client.Filters{}.
		Add("type", string(events.ContainerEventType)).
		Add("event", ActionStart, ActionDie, ActionOOM, ActionDestroy).
		Add("label", LabelProject+"="+ProjectName)
	res := e.cli.Events(wctx, client.EventsListOptions{Filters: filters})
	// Events returns once the engine answered; a refused subscription shows at once.
	select {
	case err := <-res.Err:
		cancel()
		return nil, fmt.Errorf("docker events: %w", err)
	case <-time.After(50 * time.Millisecond):
	}
	go func() {
		defer close(w.done)
		var last int64 // wall ns of the newest event seen, to reopen from
		for {
			err := w.drain(res, fn, &last)
			if wctx.Err() != nil {
				return
			}
			fn(ContainerEvent{Action: ActionWatchBroken, Err: err, WallNano: time.Now().UnixNano(), T: history.Now()})
			// Reopen from the last event (Since is inclusive: a repeated event is harmless
			// to the caller, which keys on transitions) after a short pause.
			select {
			case <-wctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			opts := client.EventsListOptions{Filters: filters}
			if last > 0 {
				opts.Since = fmt.Sprintf("%d.%09d", last/1e9, last%1e9)
			}
			res = e.cli.Events(wctx, opts)
		}
	}()
	return w, nil
}

func (w *Watcher) drain(res client.EventsResult, fn func(ContainerEvent), last *int64) error {
	for {
		select {
		case err := <-res.Err:
			if err == nil {
				err = io.EOF
			}
			return err
		case m, ok := <-res.Messages:
			if !ok {
				return errors.New("event stream closed")
			}
			ev := ContainerEvent{
				Action: string(m.Action), ContainerID: m.Actor.ID, ExitCode: -1,
				RunID: m.Actor.Attributes[LabelRun], Node: m.Actor.Attributes[LabelNode], Role: m.Actor.Attributes[LabelRole],
				WallNano: m.TimeNano,
			}
			if ev.WallNano == 0 {
				ev.WallNano = m.Time * 1e9
			}
			ev.T = history.FromWall(ev.WallNano)
			if ev.WallNano > *last {
				*last = ev.WallNano
			}
			if c, err := strconv.Atoi(m.Actor.Attributes["exitCode"]); err == nil {
				ev.ExitCode = c
			}
			if ev.Action == ActionDie {
				w.mu.Lock()
				w.lastDie[ev.ContainerID] = ev
				w.mu.Unlock()
			}
			fn(ev)
		}
	}
}

// LastDie is the newest die event seen for a container.
func (w *Watcher) LastDie(containerID string) (ContainerEvent, bool) {
	if w == nil {
		return ContainerEvent{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ev, ok := w.lastDie[containerID]
	return ev, ok
}

// Close ends the subscription and waits for the last callback to return.
func (w *Watcher) Close() {
	if w == nil {
		return
	}
	w.cancel()
	<-w.done
}
