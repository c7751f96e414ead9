package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// Target expressions. Live ones are resolved from the run's state when a fault starts;
// seeded ones are chosen at plan time (PlannedFault.Chosen) so the plan shows them.
const (
	TargetLeader          = "leader"           // live: the believer with the newest tenure (highest token)
	TargetStaleLeader     = "stale-leader"     // live: a believer whose tenure is not the newest (a zombie)
	TargetFollower        = "follower"         // live: a candidate that does not believe it leads
	TargetRandomCandidate = "random-candidate" // seeded
	TargetAllCandidates   = "all-candidates"
	TargetStoreNode       = "store-node"   // seeded: one store node
	TargetStoreLeader     = "store-leader" // live: as the store reports it (stores that elect a leader)
	TargetStoreMajority   = "store-majority"
	TargetStoreMinority   = "store-minority"
	TargetAllStore        = "all-store"
	targetNodePrefix      = "node:"
)

var targetDocs = []struct{ name, doc string }{
	{TargetLeader, "live: the candidate that believes it leads with the newest tenure (highest token) when the fault starts"},
	{TargetStaleLeader, "live: a candidate that still believes it leads although a newer tenure exists (a zombie)"},
	{TargetFollower, "live: a candidate that does not believe it leads"},
	{TargetRandomCandidate, "seeded: one candidate"},
	{TargetAllCandidates, "every candidate"},
	{TargetStoreNode, "seeded: one store node"},
	{TargetStoreLeader, "live: the store's own leader, on " + leaderStoresWord},
	{TargetStoreMajority, "seeded: a majority of the store nodes"},
	{TargetStoreMinority, "seeded: a minority of the store nodes (at least one)"},
	{TargetAllStore, "every store node"},
	{"node:NAME", "one named node, e.g. node:c2 or node:etcd-1"},
	{TargetTrigger, "with on=EVENT: the node whose event fired the fault (fault-start, fault-end: that fault's targets); with a candidate event target=leader means the same"},
}

func targetNames() []string {
	var out []string
	for _, t := range targetDocs {
		if t.name != "node:NAME" && t.name != TargetTrigger {
			out = append(out, t.name)
		}
	}
	return out
}

// TargetInfo is a target expression and what it means.
type TargetInfo struct{ Name, Doc string }

// Targets describes every target expression.
func Targets() []TargetInfo {
	out := make([]TargetInfo, len(targetDocs))
	for i, t := range targetDocs {
		out[i] = TargetInfo{t.name, withLeaderStores(t.doc)}
	}
	return out
}

// targetClass is the class of node a target expression hits ("" for node:NAME, which
// may be either).
func targetClass(t string) NodeClass {
	switch t {
	case TargetLeader, TargetStaleLeader, TargetFollower, TargetRandomCandidate, TargetAllCandidates:
		return ClassCandidate
	case TargetStoreNode, TargetStoreLeader, TargetStoreMajority, TargetStoreMinority, TargetAllStore:
		return ClassStore
	}
	return ""
}

// targetMayHit reports whether target may resolve to a node of class c.
func targetMayHit(target string, c NodeClass) bool {
	tc := targetClass(target)
	return tc == c || tc == ""
}

// allowedTargets lists the target expressions a kind accepts.
func (d kindDef) allowedTargets() []string {
	if d.Targets != nil {
		return d.Targets
	}
	var out []string
	for _, t := range targetNames() {
		if slices.Contains(d.Classes, targetClass(t)) {
			out = append(out, t)
		}
	}
	return out
}

func validTarget(t string, d kindDef) error {
	if strings.HasPrefix(t, targetNodePrefix) {
		if strings.TrimPrefix(t, targetNodePrefix) == "" {
			return fmt.Errorf("target %q names no node: write node:NAME, e.g. node:c2", t)
		}
		return nil
	}
	allowed := d.allowedTargets()
	if slices.Contains(allowed, t) {
		return nil
	}
	return fmt.Errorf("target %q is not valid for %s: use one of %s, or node:NAME", t, d.Name, strings.Join(allowed, ", "))
}

func majority(n int) int { return n/2 + 1 }

// chooseTargets fixes the seeded part of a target expression at plan time.
func chooseTargets(target string, topo Topology, rng *rand.Rand) ([]string, error) {
	store := topo.StoreNodes
	switch target {
	case TargetTrigger:
		return nil, nil // the event names it when the fault fires
	case TargetLeader, TargetStaleLeader, TargetFollower:
		if len(topo.Candidates) == 0 {
			return nil, fmt.Errorf("target %s needs candidates, the run has none", target)
		}
		return nil, nil
	case TargetStoreLeader:
		if !storeHasLeader(topo.StoreKind) {
			return nil, fmt.Errorf("target store-leader needs a store that elects a leader (%s), not %q", leaderStores(), topo.StoreKind)
		}
		return nil, nil
	case TargetRandomCandidate:
		if len(topo.Candidates) == 0 {
			return nil, fmt.Errorf("target %s: the run has no candidates", target)
		}
		return []string{topo.Candidates[rng.IntN(len(topo.Candidates))]}, nil
	case TargetAllCandidates:
		return slices.Clone(topo.Candidates), nil
	case TargetStoreNode:
		if len(store) == 0 {
			return nil, fmt.Errorf("target %s: the run has no store nodes", target)
		}
		return []string{store[rng.IntN(len(store))]}, nil
	case TargetAllStore:
		return slices.Clone(store), nil
	case TargetStoreMajority, TargetStoreMinority:
		if len(store) < 3 {
			return nil, fmt.Errorf("target %s needs at least 3 store nodes, the %s cluster has %d", target, topo.StoreKind, len(store))
		}
		perm := shuffled(store, rng)
		m := majority(len(store))
		if target == TargetStoreMajority {
			return sorted(perm[:m]), nil
		}
		return sorted(perm[m:]), nil
	}
	if name, ok := strings.CutPrefix(target, targetNodePrefix); ok {
		if !slices.Contains(topo.Candidates, name) && !slices.Contains(store, name) {
			return nil, fmt.Errorf("target %s: no node %q in this run; nodes are %s", target, name, strings.Join(append(slices.Clone(topo.Candidates), store...), ", "))
		}
		return []string{name}, nil
	}
	return nil, fmt.Errorf("unknown target %q", target)
}

func storeHasLeader(kind string) bool {
	st, _ := storekinds.Lookup(kind)
	return st.HasLeader
}

// leaderStoresWord in a doc stands for the store kinds that elect a leader of their own,
// filled in from internal/storekinds when the doc is read (withLeaderStores).
const leaderStoresWord = "{stores with a leader}"

func withLeaderStores(doc string) string {
	return strings.ReplaceAll(doc, leaderStoresWord, "stores that elect a leader ("+leaderStores()+")")
}

// leaderStores names the store kinds that elect a leader of their own, for error messages.
func leaderStores() string {
	var out []string
	for _, k := range storekinds.Names() {
		if storeHasLeader(k) {
			out = append(out, k)
		}
	}
	return strings.Join(out, ", ")
}

func shuffled(in []string, rng *rand.Rand) []string {
	out := slices.Clone(in)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func sorted(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

// liveState is the part of the run the targets are resolved against when a fault starts.
type liveState interface {
	Leaders() []Leader
	StoreLeader(ctx context.Context) (string, error)
}

// newestFirst orders believers by token, highest first (ties by name, so the order is
// deterministic).
func newestFirst(leaders []Leader) []Leader {
	out := slices.Clone(leaders)
	slices.SortFunc(out, func(a, b Leader) int {
		if a.Token != b.Token {
			if a.Token > b.Token {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Node, b.Node)
	})
	return out
}

func leaderNames(leaders []Leader) []string {
	var out []string
	for _, l := range leaders {
		out = append(out, fmt.Sprintf("%s (token %d)", l.Node, l.Token))
	}
	return out
}

// resolveTargets turns a planned fault's target into node names, now.
func resolveTargets(ctx context.Context, live liveState, topo Topology, pf PlannedFault) ([]string, error) {
	if tr := pf.Trigger; tr != nil {
		// A triggered fault hits the node whose event fired it: target=trigger always,
		// target=leader when a candidate's event fired it (that candidate, as in
		// pause:target=leader,on=elected).
		if pf.Target == TargetTrigger || (pf.Target == TargetLeader && !strings.HasPrefix(tr.On, EventFaultEnd) && !strings.HasPrefix(tr.On, EventFaultStart)) {
			if len(tr.Nodes) == 0 {
				return nil, fmt.Errorf("target %s: the triggering event (%s) named no node", pf.Target, tr.On)
			}
			return slices.Clone(tr.Nodes), nil
		}
	}
	if pf.Target == TargetTrigger {
		return nil, fmt.Errorf("target trigger: only a fault started by an event (on=EVENT) has a triggering node")
	}
	switch pf.Target {
	case TargetLeader:
		leaders := newestFirst(live.Leaders())
		if len(leaders) == 0 {
			return nil, fmt.Errorf("target leader: no candidate believes it leads right now")
		}
		return []string{leaders[0].Node}, nil
	case TargetStaleLeader:
		leaders := newestFirst(live.Leaders())
		if len(leaders) < 2 {
			return nil, fmt.Errorf("target stale-leader: no candidate believes it leads with an older tenure right now (believers: %s)", orNone(leaderNames(leaders)))
		}
		stale := leaders[1:]
		return []string{stale[pf.Pick%uint64(len(stale))].Node}, nil
	case TargetFollower:
		leaders := live.Leaders()
		var followers []string
		for _, c := range topo.Candidates {
			if !slices.ContainsFunc(leaders, func(l Leader) bool { return l.Node == c }) {
				followers = append(followers, c)
			}
		}
		if len(followers) == 0 {
			return nil, fmt.Errorf("target follower: every candidate believes it leads right now (%s)", strings.Join(leaderNames(leaders), ", "))
		}
		// A candidate that is down (killed and not yet restarted, frozen) is nobody's
		// follower: faulting it changes nothing, or fails (a second freeze). The pick is
		// among the running ones; only when none runs is it among all.
		if up := runningCandidates(ctx, live, followers); len(up) > 0 {
			followers = up
		}
		return []string{followers[pf.Pick%uint64(len(followers))]}, nil
	case TargetStoreLeader:
		l, err := live.StoreLeader(ctx)
		if err != nil {
			return nil, fmt.Errorf("target store-leader: %w", err)
		}
		if l == "" {
			return nil, fmt.Errorf("target store-leader: the store reports no leader right now")
		}
		return []string{l}, nil
	}
	if len(pf.Chosen) == 0 {
		return nil, fmt.Errorf("target %q resolved to no node", pf.Target)
	}
	return slices.Clone(pf.Chosen), nil
}

// runningCandidates keeps the names whose container runs and is not frozen, when live can
// tell (the run's Env); otherwise it returns nil.
func runningCandidates(ctx context.Context, live liveState, names []string) []string {
	env, ok := live.(interface{ Candidates() []Node })
	if !ok {
		return nil
	}
	var out []string
	for _, nd := range env.Candidates() {
		if !slices.Contains(names, nd.Name()) {
			continue
		}
		if st, err := nd.State(ctx); err == nil && st.Running && !st.Paused {
			out = append(out, nd.Name())
		}
	}
	slices.SortFunc(out, func(a, b string) int { return slices.Index(names, a) - slices.Index(names, b) })
	return out
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
