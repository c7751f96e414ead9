package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// Link is one fault of a causal chain. The first link starts on a protocol event of a
// candidate (or at an offset of the faults phase); every later one starts on the start or
// the end of the faults before it (on=fault-start / on=fault-end) or on a protocol event
// they cause (a successor's election, a step-down). Durations are written
// relative to the recipe's TTL, so one chain means the same on every recipe.
type Link struct {
	Kind   string `json:"kind"`
	Target string `json:"target,omitempty"` // a role: leader, follower, all-candidates, store-leader, all-store, trigger, ...
	Shape  string `json:"shape,omitempty"`  // partitions: the shape instead of a target
	Params string `json:"params,omitempty"` // further key=value pairs of the form, e.g. delta=+3xTTL
	// On is the event it starts on; "" starts it At into the faults phase.
	On    string `json:"on,omitempty"`
	At    string `json:"at,omitempty"`
	After string `json:"after,omitempty"` // delay from the event, e.g. 30ms or 0.5xTTL
	For   string `json:"for"`             // e.g. 2xTTL
}

// Chain is a schedule the guided search composes and mutates: 1-3 links and the number
// of candidates it runs with.
type Chain struct {
	Nodes int    `json:"nodes"`
	Links []Link `json:"links"`
}

// MaxLinks is the longest chain: real election bugs need two or three faults in order.
const MaxLinks = 3

// Menus the durations are drawn from (TTL multiples, so the same across recipes).
var (
	forMenu = []string{"0.5xTTL", "1xTTL", "1.5xTTL", "2xTTL", "3xTTL", "4xTTL"}
	// afterMenu has milliseconds for the narrow windows right after an event (between two
	// store commands, right after an election) and TTL fractions for the wider ones.
	afterMenu   = []string{"0s", "10ms", "30ms", "0.25xTTL", "0.5xTTL", "1xTTL"}
	chainEvents = []string{nemesis.EventFaultStart, nemesis.EventFaultEnd}
	atMenu      = []string{"0s", "1xTTL", "2xTTL", "4xTTL"}
	// pastTTLMenu holds a fault on the leader longer than its lease: its successor can be
	// elected while it is held, and what it does when it comes back is the test.
	pastTTLMenu = []string{"1.5xTTL", "2xTTL", "3xTTL", "4xTTL"}
)

// leaderWeight is how much likelier a draw picks a fault aimed at the leader, the
// candidate whose event fired the link, or the cut of the leader from the store than any
// other fault: measured, the single most productive shape is a fault that holds the leader
// past its TTL (docs/performance.md "Guided explore").
const leaderWeight = 3

// onLeader says the atom hits the leader (directly, as the trigger of a leader's event, or
// by cutting it off from the store).
func (a atom) onLeader() bool {
	return a.target == nemesis.TargetLeader || a.target == nemesis.TargetTrigger || a.shape == "leader-from-store"
}

func (a atom) weight() int {
	if a.onLeader() {
		return leaderWeight
	}
	return 1
}

// pickAtom draws one atom, the leader's weighted by leaderWeight.
func pickAtom(rng *rand.Rand, atoms []atom) atom {
	total := 0
	for _, a := range atoms {
		total += a.weight()
	}
	n := rng.IntN(total)
	for _, a := range atoms {
		if n -= a.weight(); n < 0 {
			return a
		}
	}
	return atoms[len(atoms)-1]
}

// quickRestart is a crash's for= when the node comes straight back, as under a supervisor
// (systemd, a kubelet): the common crash in production, and the one that matters for a
// store that forgets on restart (Redis's own Redlock page: restart it only after the TTL).
const quickRestart = "0.1xTTL"

// holdFor draws for=: a crash is a quick restart one time in two; any other fault on the
// leader is held past its TTL three times in four.
func holdFor(rng *rand.Rand, a atom) string {
	if a.crash && rng.IntN(2) == 0 {
		return quickRestart
	}
	if a.onLeader() && rng.IntN(4) != 0 {
		return pastTTLMenu[rng.IntN(len(pastTTLMenu))]
	}
	return forMenu[rng.IntN(len(forMenu))]
}

func (l Link) atom() string {
	s := l.Kind + ":target=" + l.Target
	if l.Shape != "" {
		s = l.Kind + ":shape=" + l.Shape
	}
	if l.Params != "" {
		s += "," + l.Params
	}
	return s
}

// Spec renders the chain as a --nemesis spec. Every link fires once (a trigger's default
// count), so a run is one pass through the chain and --until can end it.
func (c Chain) Spec() string {
	var parts []string
	for _, l := range c.Links {
		s := l.atom()
		if l.On != "" {
			s += ",on=" + l.On
			if l.After != "" && l.After != "0s" {
				s += ",after=" + l.After
			}
			s += ",count=1"
		} else {
			s += ",at=" + l.At
		}
		parts = append(parts, s+",for="+l.For)
	}
	return strings.Join(parts, "; ")
}

// exclusiveKinds cannot overlap on one node: the nemesis refuses to freeze a frozen
// container or kill a killed one (pause is reference-counted and may overlap), so such a
// fault fails and the run is unknown.
var exclusiveKinds = []string{"freeze", "kill", "evict"}

// Sane reports whether the chain can take effect as written. Refused:
//   - a link of an exclusive kind started on a fault's start (so while it is in effect) after
//     a fault of the same kind on the same class of nodes (candidates or store): it may well
//     hit the node that fault holds, e.g. "freeze the leader; on that fault's start freeze the
//     leader" (measured: the second freeze failed and the run was unknown after its timeout);
//   - a link aimed at the trigger's nodes on a fault's start or end after a fault on nodes of
//     a class its kind cannot hit (slow-close, a candidate's proxy, on a store node's fault);
//   - a link aimed at the trigger's nodes on a fault's start after a crash or an eviction:
//     the node it would hit is down (loss on a container just killed);
//   - a link aimed at the leader on the start or end of a crash or eviction of the leader:
//     the leader is down, then back as a follower, and no candidate leads until its lease
//     ran out and a successor won (issue 48: 7 of the 20 unknown runs of its searches were
//     "target leader: no candidate believes it leads right now", 5 of them in one search);
//   - a link aimed at the leader on the end of a crash of a store quorum, or on its start
//     but later than a few milliseconds: no candidate can renew while the store is down (a
//     restart took 2.8-8 s for Redis under load, 30-50 s for dynalite, over the TTL), so the
//     leader has stepped down by then (3 more unknown runs of issue 48's searches).
//
// Each fails when it fires, and the run is unknown after its timeout.
func (c Chain) Sane() bool {
	storeSide := func(l Link) bool { return strings.HasPrefix(l.Target, "store-") || l.Target == nemesis.TargetAllStore }
	for i, l := range c.Links {
		if i == 0 || (l.On != nemesis.EventFaultStart && l.On != nemesis.EventFaultEnd) {
			continue
		}
		traits, known := nemesis.Info(l.Kind)
		for _, prev := range c.Links[:i] {
			if aimsAtLeader(l) && (prev.Kind == "kill" || prev.Kind == "evict") && (prev.Target == nemesis.TargetLeader || prev.Target == nemesis.TargetTrigger) {
				return false
			}
			if aimsAtLeader(l) && prev.Kind == "kill" && (prev.Target == nemesis.TargetAllStore || prev.Target == nemesis.TargetStoreMajority) &&
				(l.On == nemesis.EventFaultEnd || !slices.Contains(quickAfters, l.After)) {
				return false
			}
			if l.On == nemesis.EventFaultStart && slices.Contains(exclusiveKinds, l.Kind) &&
				prev.Kind == l.Kind && (l.Target == nemesis.TargetTrigger || storeSide(prev) == storeSide(l)) {
				return false
			}
			if l.Target != nemesis.TargetTrigger || prev.Shape != "" {
				continue // a partition's shape names no one node class
			}
			if known && !slices.Contains(traits.Classes, classOf(prev, storeSide(prev))) {
				return false
			}
			if l.On == nemesis.EventFaultStart && (prev.Kind == "kill" || prev.Kind == "evict") {
				return false
			}
		}
	}
	return true
}

// quickAfters are the after= values that start a link while the leader of the moment the
// event fired still leads (afterMenu's milliseconds).
var quickAfters = []string{"", "0s", "10ms", "30ms"}

// aimsAtLeader says the link resolves its nodes from whoever leads when it fires.
func aimsAtLeader(l Link) bool {
	return l.Target == nemesis.TargetLeader || l.Shape == "leader-from-store"
}

// classOf is the class of nodes a link's target names.
func classOf(l Link, storeSide bool) nemesis.NodeClass {
	if storeSide {
		return nemesis.ClassStore
	}
	return nemesis.ClassCandidate
}

// Key identifies a chain (corpus deduplication).
func (c Chain) Key() string { return fmt.Sprintf("%d|%s", c.Nodes, c.Spec()) }

// Guide is what guided draws and mutations choose from.
type Guide struct {
	Vocabulary Vocabulary
	// MinNodes..MaxNodes is the candidate count range (3-5 by default).
	MinNodes, MaxNodes int
	// VolatileStore: the store forgets everything on a crash-restart (storekinds.Volatile),
	// so a crash of store nodes, restarted at once, opens the first link of a fresh chain
	// one time in volatileCrashOdds, whatever the swarm.
	VolatileStore bool
	// SpareStore: draw no crash of store nodes (set while such crashes have taken more than
	// their share of the search's time: an in-memory store restarted is slow to come back).
	SpareStore bool
}

// storeCrash says whether a link crashes store nodes.
func (a atom) storeCrash() bool {
	return a.crash && (strings.HasPrefix(a.target, "store-") || a.target == nemesis.TargetAllStore)
}

// volatileCrashOdds: on a store that keeps its data only in memory, one fresh chain in this
// many starts with a crash of store nodes that restarts at once. A lock or lease such a store forgot while its
// holder still trusts it is that store's own failure mode (the Redis documentation makes
// Redlock's safety depend on it); left to the plain draw, a crash of a store majority is
// 2 of the ~77 forms, about one chain in forty (measured on redis-multi's vocabulary).
const volatileCrashOdds = 3

// storeCrashes lists the vocabulary's crashes of a quorum of store nodes (store-majority,
// all-store). What a store forgot matters once a quorum of it forgot it: a minority is what
// a quorum store is built to survive, and on a one-node store every store target is the
// same node. Plain draws still crash single nodes and minorities.
func (g Guide) storeCrashes() []atom {
	var out []atom
	for _, a := range g.Vocabulary.atoms {
		if a.crash && (a.target == nemesis.TargetStoreMajority || a.target == nemesis.TargetAllStore) {
			out = append(out, a)
		}
	}
	return out
}

// Swarm draws the fault kinds one run may use (swarm testing: each run leaves some kinds
// out entirely, so a fault is not always drowned by the others). Each kind is in with
// probability 1/2, at least one always.
func (g Guide) Swarm(rng *rand.Rand) []string {
	var kinds []string
	for _, a := range g.Vocabulary.atoms {
		if !slices.Contains(kinds, a.kind) {
			kinds = append(kinds, a.kind)
		}
	}
	var in []string
	for _, k := range kinds {
		if rng.IntN(2) == 0 {
			in = append(in, k)
		}
	}
	if len(in) == 0 {
		in = append(in, kinds[rng.IntN(len(kinds))])
	}
	return in
}

// atomsOf lists the vocabulary's atoms of the swarm's kinds that can join links already
// in the chain (no proxy fault with an iptables one).
func (g Guide) atomsOf(swarm []string, links []Link) []atom {
	var proxy, network bool
	for _, l := range links {
		for _, a := range g.Vocabulary.atoms {
			if a.kind == l.Kind {
				proxy, network = proxy || a.proxy, network || a.network
				break
			}
		}
	}
	var out []atom
	for _, a := range g.Vocabulary.atoms {
		if g.SpareStore && a.storeCrash() {
			continue
		}
		if slices.Contains(swarm, a.kind) && !(a.proxy && network) && !(a.network && proxy) {
			out = append(out, a)
		}
	}
	return out
}

// candidateEvents are the protocol events a first link starts on: the leader's writes (a
// leader at work, which every run reaches in its faults phase). An election, a campaign, a
// step-down or a recipe's acquire step happens in the faults phase only when a fault causes
// it, so a chain that started on one would wait out the phase's timeout and prove nothing
// (measured: such runs were unknown after a minute each); those events start later links.
func (g Guide) candidateEvents() []string {
	return []string{nemesis.EventWrite + ":3", nemesis.EventWrite + ":3", nemesis.EventWrite + ":3", nemesis.EventWrite}
}

// chainedEvent draws what a later link starts on: mostly the start or end of the faults
// before it, sometimes a protocol event those faults cause (the election of a successor,
// a step-down, a campaign, a recipe step), e.g. "pause the leader; kill whoever is
// elected next".
func (g Guide) chainedEvent(rng *rand.Rand) string {
	if rng.IntN(3) != 0 {
		return chainEvents[rng.IntN(len(chainEvents))]
	}
	var caused []string
	for _, e := range g.Vocabulary.events {
		if !strings.HasPrefix(e, nemesis.EventWrite) {
			caused = append(caused, e)
		}
	}
	if len(caused) == 0 {
		return chainEvents[rng.IntN(len(chainEvents))]
	}
	return caused[rng.IntN(len(caused))]
}

func (g Guide) nodes(rng *rand.Rand) int {
	lo, hi := g.MinNodes, g.MaxNodes
	if lo < 1 {
		lo = 3
	}
	if hi < lo {
		hi = lo
	}
	return lo + rng.IntN(hi-lo+1)
}

// drawLink draws one link; first says it starts the chain. A first link is aimed at the
// leader one time in two (when the swarm has such a fault: a kind of the swarm, then one of
// its forms on the leader), else drawn with the leader weighted like every link.
func (g Guide) drawLink(rng *rand.Rand, swarm []string, links []Link, first bool) (Link, bool) {
	atoms := g.atomsOf(swarm, links)
	if len(atoms) == 0 {
		return Link{}, false
	}
	if first && rng.IntN(2) == 0 {
		if lead := slices.DeleteFunc(slices.Clone(atoms), func(a atom) bool { return !a.onLeader() }); len(lead) > 0 {
			// Kind first, then its forms on the leader: the cut of the leader from the store
			// (partition's only such form) is as likely as a pause of the leader (two forms).
			var kinds []string
			for _, a := range lead {
				if !slices.Contains(kinds, a.kind) {
					kinds = append(kinds, a.kind)
				}
			}
			k := kinds[rng.IntN(len(kinds))]
			atoms = slices.DeleteFunc(lead, func(a atom) bool { return a.kind != k })
		}
	}
	a := pickAtom(rng, atoms)
	forgets := false
	if first && g.VolatileStore && !g.SpareStore {
		// No draw at all without a store crash in the vocabulary (--faults narrowed it), so
		// such a search draws the same chains as on any other store.
		if crashes := g.storeCrashes(); len(crashes) > 0 && rng.IntN(volatileCrashOdds) == 0 {
			a, forgets = crashes[rng.IntN(len(crashes))], true
		}
	}
	l := Link{Kind: a.kind, Target: a.target, Shape: a.shape, Params: a.params, For: holdFor(rng, a)}
	if forgets {
		// Back at once, while holders still trust what the store forgot; a long outage would
		// only be unavailability (a mutation may still lengthen it).
		l.For = quickRestart
	}
	switch {
	case !first:
		l.On = g.chainedEvent(rng)
		l.After = afterMenu[rng.IntN(len(afterMenu))]
	case rng.IntN(5) == 0 && !a.triggered:
		l.At = atMenu[rng.IntN(len(atMenu))]
	default:
		ev := g.candidateEvents()
		l.On = ev[rng.IntN(len(ev))]
		l.After = afterMenu[rng.IntN(len(afterMenu))]
	}
	return l, true
}

// Draw composes a fresh chain of 1..MaxFaults links from the swarm's kinds.
func (g Guide) Draw(rng *rand.Rand, swarm []string) Chain {
	n := 1 + rng.IntN(min(max(g.Vocabulary.MaxFaults, 1), MaxLinks))
	c := Chain{Nodes: g.nodes(rng)}
	for i := range n {
		l, ok := g.drawLink(rng, swarm, c.Links, i == 0)
		if !ok {
			break
		}
		c.Links = append(c.Links, l)
	}
	return c
}

// Mutations a corpus chain goes through (Mutate applies one or two).
const (
	MutTrigger  = "trigger"  // change what a link starts on
	MutTarget   = "target"   // another atom of the same kind (target or shape)
	MutKind     = "kind"     // another fault (any swarm kind) in the same place
	MutDuration = "duration" // change for= or after=
	MutAdd      = "add"      // chain one more fault on the last one
	MutRemove   = "remove"   // drop a link (the next one then chains on the one before)
	MutNodes    = "nodes"    // another candidate count
)

// Mutate returns a changed copy of c and the mutations applied.
func (g Guide) Mutate(rng *rand.Rand, c Chain, swarm []string) (Chain, []string) {
	out := Chain{Nodes: c.Nodes, Links: slices.Clone(c.Links)}
	var applied []string
	// Until the chain really changed (a mutation may not apply, or undo another): a
	// mutant equal to its parent would only repeat a run.
	for want, tries := 1+rng.IntN(2), 0; (len(applied) < want || out.Key() == c.Key()) && tries < 50; tries++ {
		if m := g.mutateOnce(rng, &out, swarm); m != "" {
			applied = append(applied, m)
		}
	}
	if len(out.Links) == 0 {
		l, _ := g.drawLink(rng, swarm, nil, true)
		out.Links = []Link{l}
	}
	return out, applied
}

func (g Guide) mutateOnce(rng *rand.Rand, c *Chain, swarm []string) string {
	if len(c.Links) == 0 {
		return ""
	}
	i := rng.IntN(len(c.Links))
	l := &c.Links[i]
	longest := min(max(g.Vocabulary.MaxFaults, 1), MaxLinks)
	switch rng.IntN(7) {
	case 0:
		if i == 0 {
			ev := g.candidateEvents()
			if rng.IntN(5) == 0 && l.Target != nemesis.TargetTrigger {
				l.On, l.After, l.At = "", "", atMenu[rng.IntN(len(atMenu))]
			} else {
				l.On, l.At = ev[rng.IntN(len(ev))], ""
				if l.After == "" {
					l.After = "0s"
				}
			}
		} else {
			l.On = g.chainedEvent(rng)
		}
		return MutTrigger
	case 1:
		var same []atom
		for _, a := range g.Vocabulary.atoms {
			if a.kind == l.Kind && (a.target != nemesis.TargetTrigger || l.On != "") {
				same = append(same, a)
			}
		}
		if len(same) == 0 {
			return ""
		}
		a := pickAtom(rng, same)
		l.Target, l.Shape, l.Params = a.target, a.shape, a.params
		return MutTarget
	case 2:
		others := slices.Delete(slices.Clone(c.Links), i, i+1)
		atoms := g.atomsOf(swarm, others)
		if len(atoms) == 0 {
			return ""
		}
		a := pickAtom(rng, atoms)
		if a.triggered && l.On == "" {
			return ""
		}
		l.Kind, l.Target, l.Shape, l.Params = a.kind, a.target, a.shape, a.params
		return MutKind
	case 3:
		if l.On != "" && rng.IntN(2) == 0 {
			l.After = afterMenu[rng.IntN(len(afterMenu))]
		} else {
			l.For = holdFor(rng, g.atomOf(*l))
		}
		return MutDuration
	case 4:
		if len(c.Links) >= longest {
			return ""
		}
		nl, ok := g.drawLink(rng, swarm, c.Links, false)
		if !ok {
			return ""
		}
		c.Links = append(c.Links, nl)
		return MutAdd
	case 5:
		if len(c.Links) < 2 {
			return ""
		}
		c.Links = slices.Delete(c.Links, i, i+1)
		if i == 0 {
			// The new first link cannot chain on a fault that no longer comes before it.
			ev := g.candidateEvents()
			c.Links[0].On, c.Links[0].At = ev[rng.IntN(len(ev))], ""
		}
		return MutRemove
	default:
		if n := g.nodes(rng); n != c.Nodes {
			c.Nodes = n
			return MutNodes
		}
	}
	return ""
}

// atomOf finds the vocabulary's atom of a link (its traits); a bare one if it has none.
func (g Guide) atomOf(l Link) atom {
	for _, a := range g.Vocabulary.atoms {
		if a.kind == l.Kind && a.target == l.Target && a.shape == l.Shape && a.params == l.Params {
			return a
		}
	}
	return atom{kind: l.Kind, target: l.Target, shape: l.Shape, params: l.Params}
}
