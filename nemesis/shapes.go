package nemesis

import (
	"fmt"
	"slices"
	"sort"
)

// Grudge is a partition: node → the nodes whose packets it drops. It is directional, so a
// one-way partition is a grudge on one side only. Values are sorted, nodes with an empty
// set are left out.
type Grudge map[string][]string

// add records that node drops packets from each of from (itself excluded).
func (g Grudge) add(node string, from ...string) {
	for _, f := range from {
		if f == node || slices.Contains(g[node], f) {
			continue
		}
		g[node] = append(g[node], f)
	}
	slices.Sort(g[node])
}

// Drops reports whether node drops packets from other.
func (g Grudge) Drops(node, other string) bool { return slices.Contains(g[node], other) }

// Components cuts the given groups off from each other completely (both directions).
// Nodes in no group are untouched.
func Components(groups ...[]string) Grudge {
	g := Grudge{}
	for i, a := range groups {
		for j, b := range groups {
			if i == j {
				continue
			}
			for _, n := range a {
				g.add(n, b...)
			}
		}
	}
	return g
}

// Isolate cuts each target off from every peer in both directions.
func Isolate(targets, peers []string) Grudge {
	g := Grudge{}
	for _, t := range targets {
		for _, p := range peers {
			if p == t || slices.Contains(targets, p) {
				continue
			}
			g.add(t, p)
			g.add(p, t)
		}
	}
	return g
}

// OneWay makes every node of deaf drop packets from every node of from; from still hears deaf.
func OneWay(deaf, from []string) Grudge {
	g := Grudge{}
	for _, d := range deaf {
		g.add(d, from...)
	}
	return g
}

// Halves splits order in two (the first, smaller half when odd) and cuts them apart.
func Halves(order []string) (Grudge, error) {
	if len(order) < 2 {
		return nil, fmt.Errorf("halves need at least 2 nodes, got %d", len(order))
	}
	h := len(order) / 2
	return Components(order[:h], order[h:]), nil
}

// MajoritiesRing arranges order as a ring; each node sees exactly the majority-sized window
// of the ring centred on it and drops the rest. Every node sees a majority (itself
// included) and no two nodes see the same majority, so "I can reach a majority" does not
// mean the majorities agree. With 3 nodes the visibility is one-directional (a sees b, b
// does not see a); from 5 nodes on it is symmetric.
func MajoritiesRing(order []string) (Grudge, error) {
	n := len(order)
	if n < 3 {
		return nil, fmt.Errorf("majorities-ring needs at least 3 nodes, got %d", n)
	}
	m := majority(n)
	g := Grudge{}
	for start := 0; start < n; start++ {
		window := make([]string, m)
		for i := range m {
			window[i] = order[(start+i)%n]
		}
		centre := window[m/2]
		for _, other := range order {
			if !slices.Contains(window, other) {
				g.add(centre, other)
			}
		}
	}
	return g, nil
}

// Bridge splits order into two halves cut apart, except one node of the second half (the
// bridge) that both sides still reach and that reaches both.
func Bridge(order []string) (Grudge, error) {
	n := len(order)
	if n < 3 {
		return nil, fmt.Errorf("bridge needs at least 3 nodes, got %d", n)
	}
	h := n / 2
	a, b := order[:h], order[h:]
	bridge := b[0]
	g := Components(a, b)
	delete(g, bridge)
	for node, from := range g {
		g[node] = slices.DeleteFunc(from, func(s string) bool { return s == bridge })
		if len(g[node]) == 0 {
			delete(g, node)
		}
	}
	return g, nil
}

// Visible lists the nodes of all that node still hears (itself included).
func (g Grudge) Visible(node string, all []string) []string {
	var out []string
	for _, o := range all {
		if o == node || !g.Drops(node, o) {
			out = append(out, o)
		}
	}
	return out
}

// Edge is one directed cut: To drops packets coming From.
type Edge struct{ To, From string }

// Edges lists the grudge as directed edges, sorted.
func (g Grudge) Edges() []Edge {
	var out []Edge
	for to, froms := range g {
		for _, f := range froms {
			out = append(out, Edge{To: to, From: f})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].To != out[j].To {
			return out[i].To < out[j].To
		}
		return out[i].From < out[j].From
	})
	return out
}

// Placement says on which node (network namespace) each cut is enforced: an edge To←From
// is either an INPUT rule on To matching From's address or an OUTPUT rule on From matching
// To's address. Fewer namespaces mean fewer sidecars, so the nodes touched by most edges
// are picked first (isolating one node touches only that node).
type Placement map[string][]PlacedEdge

// PlacedEdge is an edge enforced on the node it is filed under: Inbound means drop packets
// from Peer (INPUT), otherwise drop packets to Peer (OUTPUT).
type PlacedEdge struct {
	Peer    string
	Inbound bool
}

// Place assigns every edge to one of its two endpoints.
func Place(edges []Edge) Placement {
	remaining := slices.Clone(edges)
	out := Placement{}
	for len(remaining) > 0 {
		deg := map[string]int{}
		for _, e := range remaining {
			deg[e.To]++
			deg[e.From]++
		}
		best := ""
		for n, d := range deg {
			if best == "" || d > deg[best] || (d == deg[best] && n < best) {
				best = n
			}
		}
		var rest []Edge
		for _, e := range remaining {
			switch best {
			case e.To:
				out[best] = append(out[best], PlacedEdge{Peer: e.From, Inbound: true})
			case e.From:
				out[best] = append(out[best], PlacedEdge{Peer: e.To, Inbound: false})
			default:
				rest = append(rest, e)
			}
		}
		remaining = rest
	}
	return out
}
