package nemesis

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// triggers runs the plan's event-triggered faults: it counts each tenure's writes from the
// live history and, while the fault phase runs, starts an armed trigger's fault (through
// fire, the nemesis's own start of a planned fault) when its event comes.
type triggers struct {
	fire   func(ctx context.Context, pf PlannedFault) error
	closed <-chan struct{} // the nemesis is healing: nothing new starts
	mu     sync.Mutex
	armed  *armed         // nil outside Run's fault phase
	writes map[string]int // candidate → writes reported in its current tenure (on=write:N)
}

func (tr *triggers) closing() bool {
	select {
	case <-tr.closed:
		return true
	default:
		return false
	}
}

// armed is the live state of the plan's triggers while Run runs.
type armed struct {
	ctx      context.Context
	end      time.Time // end of the fault phase: an occurrence must end before it
	triggers []*armedTrigger
	nextID   int
	wg       *sync.WaitGroup
	errMu    sync.Mutex
	errs     []error
}

type armedTrigger struct {
	pt    PlannedTrigger
	trig  Trigger
	busy  bool      // an occurrence is waiting for after= or in effect
	last  time.Time // when the last occurrence fired
	fired int
	own   map[int]bool // fault ids it started: their ends never fire it again
}

// match reports whether e fires t, and the nodes it names.
func (a *armed) match(t *armedTrigger, e history.Event, writes map[string]int) ([]string, bool) {
	if t.trig.nemesis() {
		if e.Source != history.SourceNemesis || string(e.Kind) != t.trig.Event || t.own[e.FaultID] || e.Err != "" || len(e.Targets) == 0 {
			return nil, false
		}
		return slices.Clone(e.Targets), true
	}
	if e.Source != history.SourceCandidate || e.Node == "" {
		return nil, false
	}
	switch t.trig.Event {
	case EventWrite:
		// The N-th write or a later one: a trigger that was busy or cooling down at the N-th
		// fires on the next write, so a cycle never waits for a tenure that will not come.
		if e.Kind != history.KindWrite || writes[e.Node] < t.trig.N {
			return nil, false
		}
	case EventStep:
		if e.Kind != history.KindStep || e.Name != t.trig.Step {
			return nil, false
		}
	default:
		if string(e.Kind) != t.trig.Event {
			return nil, false
		}
	}
	return []string{e.Node}, true
}

// observe feeds the triggers one event of the live history, as it is recorded (the run's
// recorder calls it for every event, the nemesis's own included). While Run is in its fault
// phase, an event that matches an idle trigger whose cooldown has passed starts that
// trigger's fault after its after= delay. It never blocks.
func (tr *triggers) observe(e history.Event) {
	tr.mu.Lock()
	if tr.writes == nil {
		tr.writes = map[string]int{}
	}
	// Writes are counted per tenure from its elected event, also before the fault phase,
	// so write:N means the tenure's N-th write even for a leader elected during warmup; a
	// heal starts every count again, so write:N also means "N writes after the last heal"
	// for a leader that kept its tenure through a fault (event-paced cycles).
	switch {
	case e.Source == history.SourceCandidate && e.Kind == history.KindElected:
		tr.writes[e.Node] = 0
	case e.Source == history.SourceCandidate && e.Kind == history.KindWrite:
		tr.writes[e.Node]++
	case e.Source == history.SourceNemesis && e.Kind == history.KindFaultEnd && e.Err == "":
		clear(tr.writes)
	}
	a := tr.armed
	if a == nil || tr.closing() {
		tr.mu.Unlock()
		return
	}
	now := time.Now()
	type start struct {
		t  *armedTrigger
		pf PlannedFault
	}
	var starts []start
	for _, t := range a.triggers {
		nodes, ok := a.match(t, e, tr.writes)
		if !ok || t.busy || (t.pt.Count > 0 && t.fired >= t.pt.Count) {
			continue
		}
		if !t.last.IsZero() && now.Sub(t.last) < time.Duration(t.pt.Every) {
			continue
		}
		if now.Add(time.Duration(t.pt.After) + time.Duration(t.pt.Fault.For)).After(a.end) {
			continue // every occurrence ends inside the fault phase
		}
		a.nextID++
		pf := t.pt.Fault
		pf.ID = a.nextID
		pf.Params = cloneMap(pf.Params)
		pf.Chosen = slices.Clone(pf.Chosen)
		pf.Pick = splitmix(t.pt.Seed + uint64(t.fired))
		pf.Trigger = &FiredTrigger{On: t.pt.On, Nodes: nodes, Seq: e.Seq, T: e.T}
		t.busy, t.last = true, now
		t.fired++
		t.own[pf.ID] = true
		a.wg.Add(1)
		starts = append(starts, start{t, pf})
	}
	tr.mu.Unlock()
	for _, s := range starts {
		go tr.runTriggered(a, s.t, s.pf)
	}
}

// runTriggered waits for after=, then runs one occurrence like a planned one.
func (tr *triggers) runTriggered(a *armed, t *armedTrigger, pf PlannedFault) {
	defer a.wg.Done()
	defer func() {
		tr.mu.Lock()
		t.busy = false
		tr.mu.Unlock()
	}()
	if d := time.Duration(t.pt.After); d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-a.ctx.Done():
			tm.Stop()
			return // the phase ended before the fault began: nothing to undo
		case <-tr.closed:
			tm.Stop()
			return
		case <-tm.C:
		}
	}
	if a.ctx.Err() != nil {
		return
	}
	if err := tr.fire(a.ctx, pf); err != nil {
		a.errMu.Lock()
		a.errs = append(a.errs, err)
		a.errMu.Unlock()
	}
}

// arm starts watching for the plan's triggers; disarm stops it (no new occurrence starts).
func (tr *triggers) arm(ctx context.Context, plan Plan, end time.Time, wg *sync.WaitGroup) *armed {
	a := &armed{ctx: ctx, end: end, nextID: len(plan.Faults), wg: wg}
	for _, f := range plan.Faults {
		a.nextID = max(a.nextID, f.ID)
	}
	for _, pt := range plan.Triggers {
		t := &armedTrigger{pt: pt, trig: pt.trigger(), own: map[int]bool{}}
		a.triggers = append(a.triggers, t)
	}
	tr.mu.Lock()
	tr.armed = a
	tr.mu.Unlock()
	return a
}

func (tr *triggers) disarm() {
	tr.mu.Lock()
	tr.armed = nil
	tr.mu.Unlock()
}
