package nemesis

import (
	"fmt"
	"slices"
	"testing"
)

func nodes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i+1)
	}
	return out
}

func TestMajoritiesRing(t *testing.T) {
	for _, n := range []int{3, 4, 5, 7} {
		all := nodes(n)
		g, err := MajoritiesRing(all)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, node := range all {
			vis := g.Visible(node, all)
			if len(vis) < majority(n) {
				t.Errorf("n=%d: %s sees %v, not a majority", n, node, vis)
			}
			key := fmt.Sprint(sorted(vis))
			if other, dup := seen[key]; dup {
				t.Errorf("n=%d: %s and %s see the same majority %s", n, node, other, key)
			}
			seen[key] = node
			if len(vis) == n {
				t.Errorf("n=%d: %s sees everyone: no partition", n, node)
			}
		}
	}
	g, _ := MajoritiesRing(nodes(5))
	for _, e := range g.Edges() { // with 5 nodes the ring is symmetric
		if !g.Drops(e.From, e.To) {
			t.Errorf("5-node ring not symmetric: %s drops %s but not back", e.To, e.From)
		}
	}
	if _, err := MajoritiesRing(nodes(2)); err == nil {
		t.Fatal("2 nodes accepted")
	}
}

func TestBridge(t *testing.T) {
	for _, n := range []int{3, 5} {
		all := nodes(n)
		g, err := Bridge(all)
		if err != nil {
			t.Fatal(err)
		}
		bridge := all[n/2]
		if len(g[bridge]) != 0 {
			t.Errorf("bridge %s drops %v", bridge, g[bridge])
		}
		for _, node := range all {
			if g.Drops(node, bridge) {
				t.Errorf("%s drops the bridge", node)
			}
		}
		a, b := all[:n/2], all[n/2+1:]
		for _, x := range a {
			for _, y := range b {
				if !g.Drops(x, y) || !g.Drops(y, x) {
					t.Errorf("n=%d: %s and %s are not cut apart: %v", n, x, y, g)
				}
			}
		}
		for _, side := range [][]string{a, b} {
			for _, x := range side {
				for _, y := range side {
					if g.Drops(x, y) {
						t.Errorf("%s drops %s on its own side", x, y)
					}
				}
			}
		}
	}
}

func TestOneWayIsolateHalves(t *testing.T) {
	g := OneWay([]string{"c1"}, []string{"e1", "e2"})
	if !g.Drops("c1", "e1") || !g.Drops("c1", "e2") || g.Drops("e1", "c1") || len(g) != 1 {
		t.Fatalf("one-way: %v", g)
	}
	g = Isolate([]string{"c1"}, []string{"c1", "c2", "e1"})
	want := Grudge{"c1": {"c2", "e1"}, "c2": {"c1"}, "e1": {"c1"}}
	if fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("isolate: %v want %v", g, want)
	}
	h, _ := Halves(nodes(5))
	if len(h) != 5 || !h.Drops("n1", "n3") || h.Drops("n1", "n2") || h.Drops("n3", "n5") {
		t.Fatalf("halves: %v", h)
	}
}

func TestPlace(t *testing.T) {
	// Isolating one node is enforced entirely in that node's namespace.
	g := Isolate([]string{"c1"}, []string{"c2", "c3", "e1", "e2", "e3"})
	p := Place(g.Edges())
	if len(p) != 1 || len(p["c1"]) != 10 {
		t.Fatalf("isolate placed on %v", p)
	}
	in, out := 0, 0
	for _, e := range p["c1"] {
		if e.Inbound {
			in++
		} else {
			out++
		}
	}
	if in != 5 || out != 5 {
		t.Fatalf("isolate: %d inbound %d outbound", in, out)
	}
	// Every edge of any grudge is placed exactly once, on one of its endpoints.
	ring, _ := MajoritiesRing(nodes(5))
	for _, g := range []Grudge{ring, Components([]string{"a", "b"}, []string{"c", "d", "e"}), OneWay([]string{"x"}, []string{"y", "z"})} {
		edges := g.Edges()
		placed := Place(edges)
		var got []Edge
		for node, pes := range placed {
			for _, pe := range pes {
				if pe.Inbound {
					got = append(got, Edge{To: node, From: pe.Peer})
				} else {
					got = append(got, Edge{To: pe.Peer, From: node})
				}
			}
		}
		slices.SortFunc(got, func(a, b Edge) int {
			if a.To != b.To {
				return compare(a.To, b.To)
			}
			return compare(a.From, b.From)
		})
		if fmt.Sprint(got) != fmt.Sprint(edges) {
			t.Fatalf("placement lost or duplicated edges:\n%v\n%v", got, edges)
		}
	}
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
