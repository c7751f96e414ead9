package nemesis

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/internal/faultkinds"
)

//go:generate go test -run TestFaultKindsTable -update-faultkinds .

// registry lists every fault kind, once, with the constructor of the mechanism it works
// through. A kind is a value in its own file; adding one is that file plus one entry here
// (docs/faults.md "Adding a fault kind"), and a kind on a new mechanism adds the mechanism's
// file too. The order in which the list first names each mechanism is HealAll's sweep order
// (newMechanisms).
var registry = []kind{
	uses[*signals](newSignals, pauseKind{}),
	uses[*containers](newContainers, freezeKind{}),
	uses[*containers](newContainers, killKind{}),
	uses[*clocks](newClocks, clockKind{}),
	uses[*netRules](newNetRules, partitionKind{}),
	uses[*netRules](newNetRules, lossKind{}),
	uses[*proxyToxics](newProxyToxics, delayKind{}),
	uses[*proxyToxics](newProxyToxics, bandwidthKind{}),
	uses[*proxyToxics](newProxyToxics, halfOpenKind{}),
	uses[*proxyToxics](newProxyToxics, slowCloseKind{}),
	uses[*proxyToxics](newProxyToxics, resetKind{}),
	uses[*containers](newContainers, evictKind{}),
	uses[*fenceFaults](newFenceFaults, fenceUnreachableKind{}),
	uses[*fenceFaults](newFenceFaults, fenceSlowKind{}),
	uses[*fenceFaults](newFenceFaults, fenceLyingKind{}),
}

// kind is one registered fault kind. Everything the rest of the project may know about it
// is in its definition (def); the nemesis calls start to inject one occurrence.
type kind interface {
	def() kindDef
	// start injects one occurrence through the kind's mechanism among ms.
	start(ctx context.Context, ms []mechanism, pf PlannedFault) (*applied, error)
	// newMechanism makes a mechanism of the kind's type for a new nemesis.
	newMechanism(l *live) mechanism
	// impl is the kind's own value, which may implement specValidator or planHook.
	impl() any
}

// faultKind is what a kind's file implements: its definition, and apply, which injects one
// occurrence through the mechanism M it works with. apply returns what to undo even when
// it fails halfway, so a partial fault is still healed.
type faultKind[M mechanism] interface {
	def() kindDef
	apply(ctx context.Context, m M, pf PlannedFault) (*applied, error)
}

// uses registers k as a kind that works through the mechanism newM makes.
func uses[M mechanism](newM func(*live) M, k faultKind[M]) kind { return via[M]{newM, k} }

type via[M mechanism] struct {
	newM func(*live) M
	k    faultKind[M]
}

func (v via[M]) newMechanism(l *live) mechanism { return v.newM(l) }

func (v via[M]) def() kindDef { return v.k.def() }

func (v via[M]) impl() any { return v.k }

func (v via[M]) start(ctx context.Context, ms []mechanism, pf PlannedFault) (*applied, error) {
	m, err := mechanismOf[M](ms)
	if err != nil {
		return nil, err
	}
	return v.k.apply(ctx, m, pf)
}

// specValidator is implemented by kinds that check combinations of keys at parse time.
type specValidator interface {
	validate(f *FaultSpec) error
}

// planHook is implemented by kinds that resolve seeded choices into pf and check the
// topology at plan time.
type planHook interface {
	plan(p *planner, f *FaultSpec, pf *PlannedFault) error
}

// NodeClass, Traits and ParamInfo are declared in internal/faultkinds, where readers that
// only need the facts (reports) find them without linking the nemesis.
type (
	NodeClass = faultkinds.NodeClass
	Traits    = faultkinds.Traits
	ParamInfo = faultkinds.ParamInfo
)

const (
	ClassCandidate = faultkinds.ClassCandidate
	ClassStore     = faultkinds.ClassStore
)

// kindDef is a kind's definition: its public traits plus how its keys are checked.
type kindDef struct {
	Traits
	params []paramDef
	// ownTargets: plan resolves the target itself (partition shapes give it other meanings).
	ownTargets bool
}

type paramDef struct {
	key, doc, def string
	check         func(v string) error
}

// applied is one injected fault: the nodes it hit and how to undo it.
type applied struct {
	targets []string
	heal    func(ctx context.Context) error
	// beganT, when set, is when the fault began, earlier than apply's return (the first
	// SIGKILL's send: Docker notices the exit later, and what the kill causes, the next
	// leader's election, must not come before the fault's start).
	beganT int64
	// note, when set, is read at the heal for the fault-end record's reason (what happened
	// to the fault while it held, e.g. a cut re-applied after a restart).
	note func() string
	// endedT, when set, is read after a successful heal: when the fault stopped being in
	// effect, earlier than the heal's return (a killed store node runs again once started,
	// and a candidate may win on its emptied state before the restart's checks are done).
	endedT func() int64
	// gone, when set, is closed once the fault has nothing left to hold (a pause whose
	// processes all exited): it ends then, before its for=, with goneWhy in its fault-end.
	gone    <-chan struct{}
	goneWhy string
}

// kinds indexes the registry by name (built once; tests may add a kind with addKind).
var kinds = indexKinds(registry)

func indexKinds(list []kind) map[string]kind {
	m := map[string]kind{}
	for _, k := range list {
		d := k.def()
		if _, dup := m[d.Name]; dup {
			panic("nemesis: fault kind " + d.Name + " registered twice")
		}
		m[d.Name] = k
	}
	return m
}

// unsupportedKinds are faults people ask for under another name, refused with the right one.
var unsupportedKinds = map[string]string{
	"latency":    "latency is a key of the delay kind: write delay:latency=200ms (see splitbrain nemesis list)",
	"timeout":    "a connection that stays open but carries nothing is the half-open kind: write half-open:close-after=0s (see splitbrain nemesis list)",
	"slow_close": "write slow-close:close-delay=2xTTL (see splitbrain nemesis list)",
	"reset_peer": "write reset (see splitbrain nemesis list)",
}

// KindNames lists the fault kinds, sorted.
func KindNames() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Info returns the traits of a fault kind; ok is false for a kind this build does not know
// (a history written by another version).
func Info(kind string) (Traits, bool) {
	k, ok := kinds[kind]
	if !ok {
		return Traits{}, false
	}
	return k.def().traits(), true
}

// Kinds describes every registered kind, sorted by name.
func Kinds() []Traits {
	var out []Traits
	for _, name := range KindNames() {
		out = append(out, kinds[name].def().traits())
	}
	return out
}

// traits is the public view of d, with the parameters listed.
func (d kindDef) traits() Traits {
	t := d.Traits
	t.Targets = slices.Clone(d.allowedTargets())
	t.Classes = slices.Clone(t.Classes)
	t.Stores = slices.Clone(t.Stores)
	t.Params = nil
	for _, p := range d.params {
		t.Params = append(t.Params, ParamInfo{Key: p.key, Doc: p.doc, Default: p.def})
	}
	return t
}

// Unsupported lists refused kinds with the reason.
func Unsupported() map[string]string {
	out := map[string]string{}
	for k, v := range unsupportedKinds {
		out[k] = v
	}
	return out
}

// Needs is what a schedule requires of the run before it starts.
type Needs struct {
	// Network: some fault changes iptables rules (check a pooled cluster's rules before reuse).
	Network bool
	// StoreClock: some clock fault may hit a store node (start servers under libfaketime).
	StoreClock bool
	// StoreProxy: some fault acts through the store fault proxy (route the candidates'
	// store connections through it).
	StoreProxy bool
}

// NeedsStoreProxy reports whether a plan has a fault that acts through the store fault
// proxy (a replayed plan decides this as its schedule would).
func (p Plan) NeedsStoreProxy() bool {
	for _, f := range p.Faults {
		if k, ok := kinds[f.Kind]; ok && k.def().Proxy {
			return true
		}
	}
	// A triggered fault needs the proxy as much as a time-tabled one does.
	for _, t := range p.Triggers {
		if k, ok := kinds[t.Fault.Kind]; ok && k.def().Proxy {
			return true
		}
	}
	return false
}

func (d kindDef) param(key string) (paramDef, bool) {
	for _, p := range d.params {
		if p.key == key {
			return p, true
		}
	}
	return paramDef{}, false
}

func (d kindDef) keyNames() []string {
	var out []string
	for _, c := range commonKeys {
		out = append(out, c.Key)
	}
	for _, p := range d.params {
		out = append(out, p.key)
	}
	return out
}

// oneOf builds a check that accepts only the listed words.
func oneOf(words ...string) func(string) error {
	return func(v string) error {
		for _, w := range words {
			if v == w {
				return nil
			}
		}
		return fmt.Errorf("want one of %s", strings.Join(words, ", "))
	}
}

const minProbability = 1e-6

func checkProbability(v string) error {
	p, err := strconv.ParseFloat(v, 64)
	// !(p >= min) also refuses NaN; below 1e-6 iptables' six-decimal probability is 0.
	if err != nil || !(p >= minProbability) || p > 1 {
		return fmt.Errorf("want a probability 0 < p <= 1 (at least 0.000001), e.g. 0.3")
	}
	return nil
}

func checkDur(signed bool) func(string) error {
	return func(v string) error {
		d, err := ParseDur(v)
		if err != nil {
			return err
		}
		if !signed && d.negative() {
			return fmt.Errorf("must be >= 0")
		}
		return nil
	}
}
