package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// parseUntil is Config.Until parsed, nil for a time-ended run (or one Validate refused).
func parseUntil(until string) *checkers.Goal {
	if until == "" {
		return nil
	}
	g, err := checkers.ParseGoal(until)
	if err != nil {
		return nil // Validate refused it already
	}
	return &g
}

// goalFor is the faults phase's goal of an event-ended run (until, parsed once by prepare),
// with Faults taken from the plan: every time-tabled occurrence and every triggered fault's
// count=. nil for a time-ended run.
func goalFor(until *checkers.Goal, plan nemesis.Plan) *checkers.Goal {
	if until == nil {
		return nil
	}
	g := *until
	if g.Elections > 0 || g.Handoffs > 0 {
		// A count of leader changes is what the row needs; its faults are the background
		// that makes them, stopped (and healed) once the count is reached.
		return &g
	}
	g.Faults = len(plan.Faults)
	for _, t := range plan.Triggers {
		g.Faults += t.Count
	}
	return &g
}

// checkUntil refuses an event-ended phase that could never end on its events: a triggered
// fault without count= may fire again and again, so "every fault ran" has no end (a goal
// that counts elections or handoffs ends on that count instead).
func checkUntil(g checkers.Goal, s nemesis.Schedule) error {
	if g.Elections > 0 || g.Handoffs > 0 {
		return nil
	}
	for _, f := range s.Faults {
		if f.On.IsSet() && f.Count <= 0 {
			return fmt.Errorf("--until ends the faults phase once every fault has run, and %q may fire any number of times: give it count=N (e.g. count=1)", f.String())
		}
	}
	return nil
}

// phaseGoals watches the live history for what each phase of an event-ended run is for:
// warmup and recovery for a leader whose writes are accepted, the faults phase for its goal
// (the same GoalTracker the checker replays, so both agree on whether it was met).
type phaseGoals struct {
	goal     checkers.Goal // the faults phase's goal, as planned (goalFor)
	mu       sync.Mutex
	tracker  *checkers.GoalTracker
	writes   int // accepted writes since the phase began (warmup, recovery)
	need     int
	phase    string
	faultsOK chan struct{} // closed when the faults phase's goal is met
	leader   chan struct{} // closed when the current warmup/recovery saw `need` accepted writes
}

// workingWrites is how many accepted writes show a leader at work, which is what warmup and
// recovery wait for. One: an accepted write is the election and the write path working. A
// fault-free row's goal is 100 writes, its whole point, and waiting for them again on each
// side of it made its warmup and recovery run to their timeouts (3 s and 5 s of every such
// row); the third write after that cost a row whose leader works 1 s before each write
// (leader_work) 2 s on each side, 44 s of a default tier's row time (docs/performance.md).
const workingWrites = 1

func newPhaseGoals(g checkers.Goal) *phaseGoals {
	return &phaseGoals{goal: g, tracker: checkers.NewGoalTracker(g), need: min(max(1, g.Writes), workingWrites),
		faultsOK: make(chan struct{}), leader: make(chan struct{})}
}

// observe takes every recorded event, in record order (the Recorder's observer). A nil
// phaseGoals (a time-ended run) takes nothing.
func (p *phaseGoals) observe(e history.Event) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tracker.Observe(e) {
		close(p.faultsOK)
	}
	switch {
	case e.Source == history.SourceHarness && e.Kind == history.KindPhase:
		p.phase, p.writes = e.Phase, 0
		p.leader = make(chan struct{})
	case e.Source == history.SourceResource && e.Kind == history.KindDecision && e.Result == history.ResultAccepted:
		if p.phase != history.PhaseWarmup && p.phase != history.PhaseRecovery {
			return
		}
		p.writes++
		if p.writes == p.need {
			close(p.leader)
		}
	}
}

// leaderWorking is closed once the phase in progress (warmup or recovery) has seen a
// leader's writes accepted.
func (p *phaseGoals) leaderWorking() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader
}

// stalled reports whether the goal's stall= ended the faults phase (the goal not met).
func (p *phaseGoals) stalled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tracker.Stalled()
}

// failed lists the counted faults that could not be applied (they ended the phase early).
func (p *phaseGoals) failed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tracker.Failed()
}

func (p *phaseGoals) missing() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tracker.Missing()
}

// wait waits up to d, or less in an event-ended run: until a leader's writes are accepted
// (warmup, recovery). It returns ctx's cause when ctx ends first.
func (p *phaseGoals) wait(ctx context.Context, d time.Duration) error {
	if p == nil {
		return sleepCtx(ctx, d)
	}
	return sleepUntil(ctx, d, p.leaderWorking())
}

func sleepCtx(ctx context.Context, d time.Duration) error { return sleepUntil(ctx, d, nil) }

// sleepUntil waits d, or less when done closes (a nil done never does); it returns ctx's
// cause when ctx ends first.
func sleepUntil(ctx context.Context, d time.Duration, done <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
	case <-done:
	}
	return nil
}
