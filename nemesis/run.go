package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// applyTimeout bounds one fault's apply or heal: a stuck Docker call must not stall the run.
const applyTimeout = 45 * time.Second

// healTimeout bounds HealAll as a whole; it runs on a context that ignores cancellation.
const healTimeout = 2 * time.Minute

// Nemesis applies one plan to a live run: it keeps the schedule's clock, the active faults
// and the list of mechanisms that changed the run, so HealAll can undo everything on any
// exit path.
type Nemesis struct {
	live       *live
	mechanisms []mechanism // one of each the registry uses, in sweep order (newMechanisms)
	triggers   *triggers

	mu       sync.Mutex
	active   map[int]*activeFault
	closing  bool           // HealAll started: no new fault may apply
	closeCh  chan struct{}  // closed with closing
	inflight sync.WaitGroup // applies in progress, awaited by HealAll
}

type activeFault struct {
	pf      PlannedFault
	targets []string
	since   time.Time
	heal    func(ctx context.Context) error
	note    func() string
	endedT  func() int64
	healed  bool
	// endedWhy says why the fault ended before its for= ("" = it did not).
	endedWhy string
}

// New prepares a nemesis for env. topo is the plan's topology (Plan.Topology).
func New(env Env, topo Topology) *Nemesis {
	l := &live{env: env, topo: topo}
	n := &Nemesis{live: l, mechanisms: newMechanisms(l, registry), active: map[int]*activeFault{}, closeCh: make(chan struct{})}
	n.triggers = &triggers{fire: n.runOne, closed: n.closeCh}
	return n
}

func (n *Nemesis) isClosing() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closing
}

func (n *Nemesis) closed() <-chan struct{} { return n.closeCh }

// Active lists the faults applied right now, by id.
func (n *Nemesis) Active() []ActiveFault {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []ActiveFault
	for _, a := range n.active {
		if !a.healed {
			out = append(out, ActiveFault{ID: a.pf.ID, Kind: a.pf.Kind, Targets: slices.Clone(a.targets), Since: a.since})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Run applies the plan's faults at their offsets from now and heals each after its
// duration. It returns when every fault has ended: at the end of the plan, or early when
// ctx is cancelled (active faults are healed before it returns). A fault that fails to
// apply is recorded (fault-start with error, then fault-end) and the run goes on; heal
// failures are recorded and returned. HealAll, from any goroutine, also ends Run early.
func (n *Nemesis) Run(ctx context.Context, plan Plan) error {
	start := time.Now()
	for _, e := range PlannedEntries(plan) {
		e.T = history.Now()
		n.live.record(e)
	}
	n.prewarmSidecars(ctx, plan)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var healErrs []error
	var trig *armed
	if len(plan.Triggers) > 0 {
		trig = n.triggers.arm(ctx, plan, start.Add(time.Duration(plan.FaultPhase)), &wg)
	}
	for _, pf := range plan.Faults {
		wait := time.Until(start.Add(time.Duration(pf.At)))
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-n.closed():
				t.Stop()
			case <-t.C:
			}
		}
		if ctx.Err() != nil || n.isClosing() {
			break
		}
		wg.Add(1)
		go func(pf PlannedFault) {
			defer wg.Done()
			if err := n.runOne(ctx, pf); err != nil {
				mu.Lock()
				healErrs = append(healErrs, err)
				mu.Unlock()
			}
		}(pf)
	}
	if trig != nil {
		// Triggers stay armed for the whole fault phase.
		t := time.NewTimer(time.Until(trig.end))
		select {
		case <-ctx.Done():
		case <-n.closed():
		case <-t.C:
		}
		t.Stop()
		n.triggers.disarm()
	}
	wg.Wait()
	if trig != nil {
		healErrs = append(healErrs, trig.errs...)
	}
	return errors.Join(healErrs...)
}

// PlannedEntries are the fault-planned events of a plan, one per schedule entry in plan
// order: a time-tabled entry (its occurrences share a spec) must take effect at least once,
// a triggered one count= times (at least once without count=). The validity checker holds
// the run to them, so a trigger that never fired cannot pass for a faulted run.
func PlannedEntries(plan Plan) []history.Event {
	var out []history.Event
	seen := map[string]bool{}
	for _, pf := range plan.Faults {
		if seen[pf.Spec] {
			continue
		}
		seen[pf.Spec] = true
		out = append(out, history.Event{Source: history.SourceNemesis, Kind: history.KindFaultPlanned, Fault: pf.Kind, Spec: orKind(pf.Spec, pf.Kind), Count: 1})
	}
	for _, pt := range plan.Triggers {
		out = append(out, history.Event{Source: history.SourceNemesis, Kind: history.KindFaultPlanned, Fault: pt.Fault.Kind,
			Spec: orKind(pt.Fault.Spec, pt.Fault.Kind), Trigger: pt.On, Count: max(pt.Count, 1)})
	}
	return out
}

func orKind(spec, kind string) string {
	if spec == "" {
		return kind
	}
	return spec
}

// prewarmSidecars starts the tools sidecars early when a fault of the plan changes
// iptables rules (netRules.prewarm).
func (n *Nemesis) prewarmSidecars(ctx context.Context, plan Plan) {
	needed := false
	for _, f := range plan.Faults {
		if k, ok := kinds[f.Kind]; ok && k.def().Network {
			needed = true
		}
	}
	for _, t := range plan.Triggers {
		if k, ok := kinds[t.Fault.Kind]; ok && k.def().Network {
			needed = true
		}
	}
	net, err := mechanismOf[*netRules](n.mechanisms)
	if !needed || err != nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closing { // HealAll waits for inflight, so it removes what these start
		net.prewarm(ctx, &n.inflight, n.isClosing)
	}
}

// runOne applies one occurrence, keeps it for its duration (or until ctx ends) and heals it.
func (n *Nemesis) runOne(ctx context.Context, pf PlannedFault) error {
	k := kinds[pf.Kind]
	if k == nil {
		n.record(history.KindFaultStart, pf, nil, history.Now(), fmt.Errorf("unknown fault kind %q in plan", pf.Kind))
		n.record(history.KindFaultEnd, pf, nil, history.Now(), nil)
		return nil
	}
	n.mu.Lock()
	if n.closing {
		n.mu.Unlock()
		return nil // HealAll raced the start: the fault never began
	}
	n.inflight.Add(1)
	n.mu.Unlock()
	actx, cancel := context.WithTimeout(ctx, applyTimeout)
	ap, err := k.start(actx, n.mechanisms, pf)
	cancel()
	var targets []string
	if ap != nil {
		targets = ap.targets
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (interrupted: the run was cancelled while the fault was applied)", err)
	}
	// Stamped once the fault is in effect (the rules are listed): a partition's sidecar may
	// take a second to start, which must not count as failover time. A kill says when it
	// began instead (its send), since the next leader may be elected before the call returns,
	// and so does a pause (its last SIGSTOP's send: the state shows later, under load seconds).
	startT := history.Now()
	if ap != nil && ap.beganT > 0 {
		startT = ap.beganT
	}
	n.record(history.KindFaultStart, pf, targets, startT, err)
	if ap == nil || ap.heal == nil {
		n.record(history.KindFaultEnd, pf, targets, history.Now(), nil)
		n.inflight.Done()
		return nil
	}
	af := &activeFault{pf: pf, targets: targets, since: time.Now(), heal: ap.heal, note: ap.note, endedT: ap.endedT}
	n.mu.Lock()
	n.active[pf.ID] = af
	n.mu.Unlock()
	n.inflight.Done()

	if err == nil && !n.isClosing() { // a fault that failed halfway is undone at once
		t := time.NewTimer(time.Duration(pf.For))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-n.closed():
			t.Stop()
		case <-t.C:
		case <-ap.gone:
			t.Stop()
			n.mu.Lock()
			af.endedWhy = ap.goneWhy
			n.mu.Unlock()
		}
	}
	return n.healOne(ctx, af)
}

// healOne undoes one active fault exactly once and records its end.
func (n *Nemesis) healOne(ctx context.Context, af *activeFault) error {
	n.mu.Lock()
	if af.healed {
		n.mu.Unlock()
		return nil
	}
	af.healed = true
	endedWhy := af.endedWhy
	n.mu.Unlock()
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), applyTimeout)
	defer cancel()
	err := af.heal(hctx)
	n.recordEnd(af, endedWhy, err)
	n.mu.Lock()
	delete(n.active, af.pf.ID)
	n.mu.Unlock()
	if err != nil {
		return fmt.Errorf("heal fault %d (%s on %s): %w", af.pf.ID, af.pf.Kind, strings.Join(af.targets, ","), err)
	}
	return nil
}

func (n *Nemesis) record(kind history.Kind, pf PlannedFault, targets []string, t int64, err error) {
	e := history.Event{
		Source: history.SourceNemesis, Kind: kind, T: t,
		FaultID: pf.ID, Fault: pf.Kind, Targets: targets, Spec: pf.Spec,
	}
	if err != nil {
		e.Err = err.Error()
	}
	if kind == history.KindFaultStart && pf.Trigger != nil {
		e.Trigger, e.TriggerNodes, e.TriggerSeq, e.TriggerT = pf.Trigger.On, pf.Trigger.Nodes, pf.Trigger.Seq, pf.Trigger.T
	}
	n.live.record(e)
}

// recordEnd records a healed fault's fault-end, with what happened to it while it held.
func (n *Nemesis) recordEnd(af *activeFault, endedWhy string, err error) {
	e := history.Event{
		Source: history.SourceNemesis, Kind: history.KindFaultEnd, T: history.Now(),
		FaultID: af.pf.ID, Fault: af.pf.Kind, Targets: af.targets, Spec: af.pf.Spec,
	}
	if err != nil {
		e.Err = err.Error()
	}
	if af.note != nil {
		e.Reason = af.note()
	}
	if endedWhy != "" {
		e.Reason = strings.TrimPrefix(e.Reason+"; "+endedWhy, "; ")
	}
	if af.endedT != nil && err == nil {
		if t := af.endedT(); t > 0 && t < e.T {
			e.T = t
		}
	}
	n.live.record(e)
}

// HealAll undoes everything this nemesis changed that is still in effect: the active faults
// first, newest first, then every mechanism's sweep in list order (stopped processes
// continued, frozen nodes thawed, killed nodes restarted, clocks reset, the project's
// iptables rules removed and verified, sidecars removed, toxics and fence faults cleared).
// It is idempotent and works on a cancelled ctx (bounded by its own timeout). Every
// failure is returned.
func (n *Nemesis) HealAll(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healTimeout)
	defer cancel()
	var errs []error
	n.mu.Lock()
	if !n.closing {
		n.closing = true
		close(n.closeCh)
	}
	n.mu.Unlock()
	// Let applies in flight finish so what they changed is known and healed below.
	waited := make(chan struct{})
	go func() { n.inflight.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-hctx.Done():
		errs = append(errs, fmt.Errorf("a fault was still being applied when the heal deadline passed"))
	}

	n.mu.Lock()
	var pending []*activeFault
	for _, a := range n.active {
		pending = append(pending, a)
	}
	n.mu.Unlock()
	sort.Slice(pending, func(i, j int) bool { return pending[i].pf.ID > pending[j].pf.ID })
	for _, a := range pending {
		if err := n.healOne(hctx, a); err != nil {
			errs = append(errs, err)
		}
	}

	// The sweep: state left behind by faults whose own heal failed or was cut short.
	for _, m := range n.mechanisms {
		errs = append(errs, m.sweep(hctx)...)
	}
	return errors.Join(errs...)
}

// NodeStarting is told that node is about to start again outside the nemesis (a fence's
// power-on, a handoff's restart): what the mechanisms keep in its namespaces (an active
// cut's rules) is held on its peers until NodeStarted.
func (n *Nemesis) NodeStarting(ctx context.Context, node string) error {
	var errs []error
	for _, w := range n.live.watchers() {
		errs = append(errs, w.nodeStarting(ctx, node))
	}
	return errors.Join(errs...)
}

// NodeStarted puts back what the mechanisms keep in node's namespaces, which its start made
// anew; it returns once that is in effect (or what failed). Call it after every start of a
// node during the fault phase; a node no fault involves costs nothing.
func (n *Nemesis) NodeStarted(ctx context.Context, node string) error {
	var errs []error
	for _, w := range n.live.watchers() {
		errs = append(errs, w.nodeStarted(ctx, node))
	}
	return errors.Join(errs...)
}

// Observe feeds the nemesis one event of the live history, as it is recorded (the run's
// recorder calls it for every event, the nemesis's own included): while Run is in its fault
// phase, an event that matches an idle trigger whose cooldown has passed starts that
// trigger's fault after its after= delay. It never blocks.
func (n *Nemesis) Observe(e history.Event) { n.triggers.observe(e) }

// forEachTarget applies fn to each target, stopping at the first error; it returns the
// targets fn succeeded on so a partial fault can be healed.
func forEachTarget(names []string, fn func(name string) error) ([]string, error) {
	var done []string
	for _, name := range names {
		if err := fn(name); err != nil {
			return done, fmt.Errorf("%s: %w", name, err)
		}
		done = append(done, name)
	}
	return done, nil
}
