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

// Nemesis applies one plan to a live run and remembers everything it changed, so HealAll
// can undo it on any exit path.
type Nemesis struct {
	env  Env
	topo Topology

	mu         sync.Mutex
	active     map[int]*activeFault
	sidecars   map[string]*sidecar        // by target node name
	sideLocks  map[string]*sync.Mutex     // by target: two faults never race to create one sidecar
	netNodes   map[string]bool            // nodes that ever got iptables rules
	frozen     map[string]bool            // nodes this nemesis froze (docker pause)
	killed     map[string]bool            // nodes killed and not yet restarted
	stopped    map[string][]proc          // processes this nemesis SIGSTOPped, by fault owner key
	stopCounts map[proc]int               // how many active pauses hold each stopped process
	clocks     map[string]int64           // current libfaketime offset (ns) per store node this nemesis skewed
	candClocks map[string]*candidateClock // what each candidate's clock file holds, once written
	proxyLinks map[string]bool            // store proxy links that ever got toxics
	cuts       netCuts                    // active iptables faults, put back when a node restarts
	closing    bool                       // HealAll started: no new fault may apply
	closeCh    chan struct{}              // closed with closing
	armed      *armed                     // the plan's triggers while Run is in the fault phase
	writes     map[string]int             // candidate → writes reported in its current tenure (on=write:N)
	inflight   sync.WaitGroup             // applies in progress, awaited by HealAll
}

type activeFault struct {
	pf      PlannedFault
	targets []string
	since   time.Time
	heal    func(ctx context.Context) error
	note    func() string
	healed  bool
}

// New prepares a nemesis for env. topo is the plan's topology (Plan.Topology).
func New(env Env, topo Topology) *Nemesis {
	return &Nemesis{
		env: env, topo: topo,
		active: map[int]*activeFault{}, sidecars: map[string]*sidecar{}, sideLocks: map[string]*sync.Mutex{}, netNodes: map[string]bool{},
		frozen: map[string]bool{}, killed: map[string]bool{}, stopped: map[string][]proc{}, stopCounts: map[proc]int{}, clocks: map[string]int64{}, candClocks: map[string]*candidateClock{}, proxyLinks: map[string]bool{},
		closeCh: make(chan struct{}), writes: map[string]int{},
	}
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
		_ = n.env.Record(e)
	}
	n.prewarmSidecars(ctx, plan)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var healErrs []error
	var trig *armed
	if len(plan.Triggers) > 0 {
		trig = n.arm(ctx, plan, start.Add(time.Duration(plan.FaultPhase)), &wg)
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
		n.disarm()
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

// prewarmSidecars starts, in the background, the tools sidecars network faults will need,
// so a partition takes effect close to its planned time instead of after a container start
// (about 1 s here). Failures are ignored: sidecarFor retries when the fault starts.
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
	if !needed {
		return
	}
	names := append(slices.Clone(n.topo.Candidates), n.topo.StoreNodes...)
	sem := make(chan struct{}, 3) // 2 cores shared with the run: a few at a time
	for _, name := range names {
		n.mu.Lock()
		if n.closing {
			n.mu.Unlock()
			return
		}
		n.inflight.Add(1) // HealAll waits for these, so it removes what they start
		n.mu.Unlock()
		go func() {
			defer n.inflight.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil || n.isClosing() {
				return
			}
			pctx, cancel := context.WithTimeout(ctx, applyTimeout)
			defer cancel()
			_, _ = n.sidecarFor(pctx, name)
		}()
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
	ap, err := k.apply(actx, n, pf)
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
	// began instead (its send), since the next leader may be elected before the call returns.
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
	af := &activeFault{pf: pf, targets: targets, since: time.Now(), heal: ap.heal, note: ap.note}
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
	n.mu.Unlock()
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), applyTimeout)
	defer cancel()
	err := af.heal(hctx)
	n.recordEnd(af, err)
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
	_ = n.env.Record(e) // the history writer reports its own errors to the run
}

// recordEnd records a healed fault's fault-end, with what happened to it while it held.
func (n *Nemesis) recordEnd(af *activeFault, err error) {
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
	_ = n.env.Record(e)
}

// HealAll undoes everything this nemesis changed that is still in effect: active faults
// first, then a sweep over every node it ever touched (project iptables chains removed and
// verified, frozen nodes thawed, stopped processes continued, killed nodes restarted, clock
// offsets reset), and finally its sidecars are removed. It is idempotent and works on a
// cancelled ctx (bounded by its own timeout). Every failure is returned.
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

	// Safety sweep: state left behind by faults whose own heal failed or was cut short.
	n.mu.Lock()
	stopped := n.stopped
	n.stopped = map[string][]proc{}
	n.stopCounts = map[proc]int{}
	frozen := keys(n.frozen)
	killed := keys(n.killed)
	netNodes := keys(n.netNodes)
	n.mu.Unlock()

	for _, procs := range stopped {
		if err := continueProcs(procs); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range frozen {
		if err := n.thaw(hctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range killed {
		if err := n.restart(hctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, n.resetClocks(hctx)...)
	for _, name := range netNodes {
		if err := n.clearNetwork(hctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := n.clearProxy(hctx); err != nil {
		errs = append(errs, err)
	}
	if err := n.removeSidecars(hctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func keys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// node finds a live node by name among candidates and store nodes.
func (n *Nemesis) node(name string) (Node, error) {
	for _, nd := range n.env.Candidates() {
		if nd.Name() == name {
			return nd, nil
		}
	}
	for _, nd := range n.env.StoreNodes() {
		if nd.Name() == name {
			return nd, nil
		}
	}
	return nil, fmt.Errorf("no node %q in this run", name)
}

func (n *Nemesis) isCandidate(name string) bool {
	for _, nd := range n.env.Candidates() {
		if nd.Name() == name {
			return true
		}
	}
	return false
}

// targets resolves a planned fault's target against the live run.
func (n *Nemesis) targets(ctx context.Context, pf PlannedFault) ([]string, error) {
	return resolveTargets(ctx, n.env, n.topo, pf)
}

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
