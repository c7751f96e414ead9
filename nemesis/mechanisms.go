package nemesis

import (
	"context"
	"fmt"
	"reflect"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// A mechanism is one way the nemesis changes a live run: signals to processes, the
// container engine, iptables rules, clocks, the store proxy's toxics, the fence device. It
// owns the state of what it changed, under its own lock, and sweep undoes whatever of it
// is still in effect once every active fault's own heal has run (a heal that failed or was
// cut short), reporting each failure. A fault kind works through exactly one mechanism,
// which its registry entry names by its constructor (uses in kinds.go).
type mechanism interface {
	sweep(ctx context.Context) []error
}

// nodeWatcher is a mechanism whose changes live in a node's namespaces, so they must follow
// the node through a stop and a start (a kill's restart, a fence's power-on, a handoff).
type nodeWatcher interface {
	nodeStopped(ctx context.Context, node string)
	nodeStarting(ctx context.Context, node string) error
	nodeStarted(ctx context.Context, node string) error
}

// newMechanisms makes one of each mechanism the kinds use, in the order the list first
// names them, which is the sweep's order: the registry names signals (processes
// continued) and containers (nodes thawed and started again) first, so that clocks, the
// network rules (and then the sidecars that placed them), the toxics and the fence faults
// are cleared on running nodes.
func newMechanisms(l *live, list []kind) []mechanism {
	var out []mechanism
	seen := map[reflect.Type]bool{}
	for _, k := range list {
		m := k.newMechanism(l)
		if t := reflect.TypeOf(m); !seen[t] {
			seen[t] = true
			out = append(out, m)
		}
	}
	l.mechanisms = out
	return out
}

// mechanismOf is the nemesis's mechanism of type M.
func mechanismOf[M mechanism](list []mechanism) (M, error) {
	for _, m := range list {
		if t, ok := m.(M); ok {
			return t, nil
		}
	}
	var zero M
	return zero, fmt.Errorf("no %T mechanism in this nemesis (no registered kind uses it)", zero)
}

// live is the run as a mechanism sees it: its nodes, the live state targets resolve
// against, and the history it records into.
type live struct {
	env        Env
	topo       Topology
	mechanisms []mechanism // every mechanism of the nemesis (newMechanisms)
}

// watchers are the mechanisms that follow a node through a stop and a start.
func (l *live) watchers() []nodeWatcher {
	var out []nodeWatcher
	for _, m := range l.mechanisms {
		if w, ok := m.(nodeWatcher); ok {
			out = append(out, w)
		}
	}
	return out
}

// node finds a live node by name among candidates and store nodes.
func (l *live) node(name string) (Node, error) {
	for _, nd := range l.env.Candidates() {
		if nd.Name() == name {
			return nd, nil
		}
	}
	for _, nd := range l.env.StoreNodes() {
		if nd.Name() == name {
			return nd, nil
		}
	}
	return nil, fmt.Errorf("no node %q in this run", name)
}

func (l *live) isCandidate(name string) bool {
	for _, nd := range l.env.Candidates() {
		if nd.Name() == name {
			return true
		}
	}
	return false
}

// targets resolves a planned fault's target against the live run.
func (l *live) targets(ctx context.Context, pf PlannedFault) ([]string, error) {
	return resolveTargets(ctx, l.env, l.topo, pf)
}

// record writes e into the run's history; the history writer reports its own errors to
// the run.
func (l *live) record(e history.Event) { _ = l.env.Record(e) }
