package nemesis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// partition: iptables rules in the filter table of the affected nodes' network namespaces
// (project chains only, applied from a tools sidecar), removed and verified at the end.
// Shapes are grudges (shapes.go); each directed cut is enforced on one endpoint (Place).
type partitionKind struct{}

func (partitionKind) def() kindDef {
	return kindDef{
		Traits: Traits{
			Name:       "partition",
			Summary:    "cut network links with iptables (DROP or REJECT) in one of several shapes, heal after for=",
			DefaultFor: "2xTTL",
			Classes:    []NodeClass{ClassCandidate, ClassStore},
			Network:    true,
			Colour:     "#8250df",
			Started:    "cut off from the network",
			Healed:     "reconnected",
			Silences:   true,
		},
		ownTargets: true,
		params: []paramDef{
			{"shape", "isolate | leader-from-store | store-majority | halves | majorities-ring | bridge | one-way", "isolate", oneOf(shapeNames...)},
			{"peer", "the other side for isolate/one-way: all | store | candidates | leader | store-leader | node:NAME", "", checkPeer},
			{"among", "nodes a halves/majorities-ring/bridge shape is drawn over: store | candidates | all", "", oneOf("store", "candidates", "all")},
			{"mode", "drop (silent, connections hang) | reject (TCP reset, fail fast)", ActionDrop, oneOf(ActionDrop, ActionReject)},
		},
	}
}

var shapeNames = []string{"isolate", "leader-from-store", "store-majority", "halves", "majorities-ring", "bridge", "one-way"}

// ShapeInfo describes a partition shape for listings.
type ShapeInfo struct{ Name, Doc string }

// Shapes describes the partition shapes.
func Shapes() []ShapeInfo {
	return []ShapeInfo{
		{"isolate", "target (default leader) cut off from peer (default all other nodes), both directions"},
		{"leader-from-store", "the leader candidate cut off from every store node"},
		{"store-majority", "store nodes split into a majority and a minority (target=store-minority seeded, or store-leader: the store leader lands in the minority); candidates reach all"},
		{"halves", "random halves over among= (default all nodes)"},
		{"majorities-ring", "every node of among= (default store) sees a majority, no two the same majority"},
		{"bridge", "two halves of among= (default store) cut apart, one bridge node sees both"},
		{"one-way", "target (default leader) cannot hear peer (default store); peer still hears target"},
	}
}

func checkPeer(v string) error {
	switch v {
	case "all", "store", "candidates", TargetLeader, TargetStoreLeader:
		return nil
	}
	if strings.HasPrefix(v, targetNodePrefix) && len(v) > len(targetNodePrefix) {
		return nil
	}
	return fmt.Errorf("want all, store, candidates, leader, store-leader or node:NAME")
}

func (partitionKind) validate(f *FaultSpec) error {
	shape := f.Params["shape"]
	if shape == "" {
		shape = "isolate"
	}
	switch shape {
	case "isolate", "one-way":
		if _, ok := f.Params["among"]; ok {
			return fmt.Errorf("among= does not apply to shape=%s (use target= and peer=)", shape)
		}
	case "leader-from-store":
		if f.Target != "" && f.Target != TargetLeader {
			return fmt.Errorf("shape=leader-from-store always targets the leader; for another node use shape=isolate,target=%s,peer=store", f.Target)
		}
		if _, ok := f.Params["peer"]; ok {
			return fmt.Errorf("shape=leader-from-store always cuts from the store; use shape=isolate,peer=... for other peers")
		}
	case "store-majority":
		if f.Target != "" && f.Target != TargetStoreMinority && f.Target != TargetStoreLeader {
			return fmt.Errorf("shape=store-majority takes target=store-minority (seeded minority) or target=store-leader (the store leader lands in the minority), not %q", f.Target)
		}
	case "halves", "majorities-ring", "bridge":
		if f.Target != "" {
			return fmt.Errorf("shape=%s takes no target (it is drawn over among=store|candidates|all)", shape)
		}
		if _, ok := f.Params["peer"]; ok {
			return fmt.Errorf("shape=%s takes no peer (it is drawn over among=store|candidates|all)", shape)
		}
	}
	if shape != "isolate" && shape != "one-way" && f.Params["peer"] != "" {
		return fmt.Errorf("peer= applies only to shape=isolate or shape=one-way")
	}
	return nil
}

// plan fixes targets and the seeded parts of the shape.
func (partitionKind) plan(p *planner, f *FaultSpec, pf *PlannedFault) error {
	shape := pf.Params["shape"]
	all := append(slices.Clone(p.topo.Candidates), p.topo.StoreNodes...)
	among := func(def string) []string {
		a := pf.Params["among"]
		if a == "" {
			a = def
			pf.Params["among"] = def
		}
		switch a {
		case "store":
			return p.topo.StoreNodes
		case "candidates":
			return p.topo.Candidates
		}
		return all
	}
	var err error
	switch shape {
	case "isolate", "one-way":
		if pf.Target == "" {
			pf.Target = TargetLeader
		}
		if pf.Params["peer"] == "" {
			if shape == "isolate" {
				pf.Params["peer"] = "all"
			} else {
				pf.Params["peer"] = "store"
			}
		}
		if pf.Chosen, err = chooseTargets(pf.Target, p.topo, p.rng); err != nil {
			return err
		}
		return checkPeerTopology(pf.Params["peer"], p.topo)
	case "leader-from-store":
		pf.Target, pf.Params["peer"] = TargetLeader, "store"
		if len(p.topo.StoreNodes) == 0 {
			return fmt.Errorf("shape=leader-from-store: the run has no store nodes")
		}
		_, err = chooseTargets(TargetLeader, p.topo, p.rng)
		return err
	case "store-majority":
		if pf.Target == "" {
			pf.Target = TargetStoreMinority
		}
		if len(p.topo.StoreNodes) < 3 {
			return fmt.Errorf("shape=store-majority needs at least 3 store nodes, the %s cluster has %d", p.topo.StoreKind, len(p.topo.StoreNodes))
		}
		if pf.Target == TargetStoreLeader {
			if !storeHasLeader(p.topo.StoreKind) {
				return fmt.Errorf("target=store-leader needs a store that elects a leader (%s), not %q", leaderStores(), p.topo.StoreKind)
			}
			// The minority is the live leader plus seeded fill-ins from this order.
			pf.Chosen = shuffled(p.topo.StoreNodes, p.rng)
			return nil
		}
		minority, err := chooseTargets(TargetStoreMinority, p.topo, p.rng)
		if err != nil {
			return err
		}
		pf.Chosen = minority
		pf.Grudge = Components(minority, without(p.topo.StoreNodes, minority))
		return nil
	case "halves":
		order := shuffled(among("all"), p.rng)
		pf.Chosen = order
		pf.Grudge, err = Halves(order)
	case "majorities-ring":
		order := shuffled(among("store"), p.rng)
		pf.Chosen = order
		pf.Grudge, err = MajoritiesRing(order)
	case "bridge":
		order := shuffled(among("store"), p.rng)
		pf.Chosen = order
		pf.Grudge, err = Bridge(order)
	default:
		return fmt.Errorf("unknown shape %q: use one of %s", shape, strings.Join(shapeNames, ", "))
	}
	if err != nil {
		return fmt.Errorf("shape=%s over among=%s: %w", shape, pf.Params["among"], err)
	}
	return nil
}

func checkPeerTopology(peer string, topo Topology) error {
	switch peer {
	case "store":
		if len(topo.StoreNodes) == 0 {
			return fmt.Errorf("peer=store: the run has no store nodes")
		}
	case TargetStoreLeader:
		if !storeHasLeader(topo.StoreKind) {
			return fmt.Errorf("peer=store-leader needs a store that elects a leader (%s), not %q", leaderStores(), topo.StoreKind)
		}
	}
	if name, ok := strings.CutPrefix(peer, targetNodePrefix); ok {
		if !slices.Contains(topo.Candidates, name) && !slices.Contains(topo.StoreNodes, name) {
			return fmt.Errorf("peer=%s: no such node in this run", peer)
		}
	}
	return nil
}

// without is all but the elements in drop, in order.
func without[T comparable](all, drop []T) []T {
	var out []T
	for _, a := range all {
		if !slices.Contains(drop, a) {
			out = append(out, a)
		}
	}
	return out
}

// resolvePeers turns a peer expression into node names, now.
func (l *live) resolvePeers(ctx context.Context, peer string, exclude []string) ([]string, error) {
	var out []string
	switch peer {
	case "all":
		out = append(slices.Clone(l.topo.Candidates), l.topo.StoreNodes...)
	case "store":
		out = slices.Clone(l.topo.StoreNodes)
	case "candidates":
		out = slices.Clone(l.topo.Candidates)
	default:
		names, err := resolveTargets(ctx, l.env, l.topo, PlannedFault{Target: peer, Chosen: nodeChoice(peer)})
		if err != nil {
			return nil, fmt.Errorf("peer: %w", err)
		}
		out = names
	}
	out = without(out, exclude)
	if len(out) == 0 {
		return nil, fmt.Errorf("peer=%s resolves to no node other than the target", peer)
	}
	return out, nil
}

func nodeChoice(expr string) []string {
	if name, ok := strings.CutPrefix(expr, targetNodePrefix); ok {
		return []string{name}
	}
	return nil
}

// grudgeNow computes the partition of pf from the live state; it also returns the nodes
// to report as the fault's targets.
func (l *live) grudgeNow(ctx context.Context, pf PlannedFault) (Grudge, []string, error) {
	shape := pf.Params["shape"]
	switch shape {
	case "isolate", "leader-from-store", "one-way":
		targets, err := l.targets(ctx, pf)
		if err != nil {
			return nil, nil, err
		}
		peers, err := l.resolvePeers(ctx, pf.Params["peer"], targets)
		if err != nil {
			return nil, targets, err
		}
		if shape == "one-way" {
			return OneWay(targets, peers), targets, nil
		}
		return Isolate(targets, peers), targets, nil
	case "store-majority":
		if pf.Grudge != nil {
			return pf.Grudge, slices.Clone(pf.Chosen), nil // targets: the minority side
		}
		leader, err := l.env.StoreLeader(ctx)
		if err != nil || leader == "" {
			return nil, nil, fmt.Errorf("target store-leader: %v", orNoLeader(err))
		}
		size := len(l.topo.StoreNodes) - majority(len(l.topo.StoreNodes))
		minority := []string{leader}
		for _, s := range pf.Chosen {
			if len(minority) >= size {
				break
			}
			if s != leader {
				minority = append(minority, s)
			}
		}
		slices.Sort(minority)
		g := Components(minority, without(l.topo.StoreNodes, minority))
		return g, minority, nil
	}
	if pf.Grudge == nil {
		return nil, nil, fmt.Errorf("partition shape %q has no grudge in the plan", shape)
	}
	return pf.Grudge, grudgeNodes(pf.Grudge), nil
}

func orNoLeader(err error) error {
	if err != nil {
		return err
	}
	return errors.New("the store reports no leader right now")
}

// grudgeNodes lists every node a grudge involves.
func grudgeNodes(g Grudge) []string {
	var out []string
	for to, froms := range g {
		out = append(out, to)
		out = append(out, froms...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (partitionKind) apply(ctx context.Context, r *netRules, pf PlannedFault) (*applied, error) {
	g, targets, err := r.grudgeNow(ctx, pf)
	if err != nil {
		return nil, err
	}
	return r.applyGrudge(ctx, pf, g, targets, pf.Params["mode"], 0)
}

// applyGrudge enforces g (with probability prob per packet when 0 < prob < 1) and returns
// the heal that removes exactly this fault's rules.
func (r *netRules) applyGrudge(ctx context.Context, pf PlannedFault, g Grudge, targets []string, action string, prob float64) (*applied, error) {
	if len(g) == 0 {
		return nil, fmt.Errorf("the partition cuts nothing (no node drops from another)")
	}
	ips := map[string]string{}
	for _, name := range grudgeNodes(g) {
		nd, err := r.node(name)
		if err != nil {
			return nil, err
		}
		ip, err := nd.IP(ctx)
		if err != nil || ip == "" {
			return nil, fmt.Errorf("address of %s: %v (is it running?)", name, errOr(err, "no IP on the run network"))
		}
		ips[name] = ip
	}
	c := &netCut{pf: pf, g: g, action: action, prob: prob, ips: ips, placed: map[string]bool{}}
	rulesOn := c.rulesOn()
	heal := func(ctx context.Context) error {
		// The cut ends here: no restart puts its rules back from now on.
		c.mu.Lock()
		defer c.mu.Unlock()
		c.healed = true
		r.cuts.remove(pf.ID)
		now := c.rulesOn()
		var errs []error
		for _, node := range sortedKeys(c.placed) {
			if err := r.removeRules(ctx, node, pf.ID, now[node]); err != nil {
				errs = append(errs, err)
			}
		}
		for _, node := range sortedKeys(c.bridges) { // a restart that never completed
			if err := r.unbridge(ctx, c, node); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	ap := &applied{targets: targets, heal: heal, note: c.note}
	// Registered before the first rule goes in: a node restarting from here on gets the
	// cut's rules back (NodeStarted waits for this apply to finish on c.mu).
	c.mu.Lock()
	defer c.mu.Unlock()
	r.cuts.add(c)
	for _, node := range sortedKeys(rulesOn) {
		rules := rulesOn[node]
		script, err := ApplyScript(rules)
		if err != nil {
			return ap, err
		}
		r.touched.add(node)
		c.placed[node] = true
		out, err := r.iptables(ctx, node, script)
		if err != nil {
			return ap, err
		}
		if got, want := CountFaultRules(out, pf.ID), expectedRuleCount(rules); got != want {
			return ap, fmt.Errorf("iptables in %s lists %d rules of fault %d, want %d:\n%s", node, got, pf.ID, want, out)
		}
	}
	return ap, nil
}

// removeRules deletes one fault's rules from node and verifies none is listed any more.
// A node that is not running lost its namespace (and the rules) already.
func (r *netRules) removeRules(ctx context.Context, node string, faultID int, rules []Rule) error {
	nd, err := r.node(node)
	if err != nil {
		return err
	}
	if st, err := nd.State(ctx); err == nil && !st.Running {
		return nil
	}
	script, err := RemoveScript(rules)
	if err != nil {
		return err
	}
	out, err := r.iptables(ctx, node, script)
	if err != nil {
		// The node may have been killed (exit 137) or restarted while the script ran: a node
		// that stopped took its namespace along; one that restarted has a fresh namespace,
		// which the retry (removal tolerates absent rules) verifies.
		if st, serr := nd.State(ctx); serr == nil && !st.Running {
			return nil
		}
		if out, err = r.iptables(ctx, node, script); err != nil {
			return fmt.Errorf("remove rules of fault %d: %w", faultID, err)
		}
	}
	if c := CountFaultRules(out, faultID); c != 0 {
		return fmt.Errorf("iptables in %s still lists %d rules of fault %d after removal:\n%s", node, c, faultID, out)
	}
	return nil
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func errOr(err error, msg string) string {
	if err != nil {
		return err.Error()
	}
	return msg
}
