package nemesis

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var kubeTopo = Topology{
	Candidates: []string{"c1", "c2", "c3"},
	StoreNodes: []string{"etcd", "kube-apiserver", "kube-controller-manager"},
	StoreKind:  "kubernetes",
	TTL:        2 * time.Second,
}

var etcdTopo = Topology{
	Candidates: []string{"c1", "c2", "c3"},
	StoreNodes: []string{"etcd-1", "etcd-2", "etcd-3"},
	StoreKind:  "etcd",
	TTL:        2 * time.Second,
}

func planJSON(t *testing.T, spec string, seed int64, phase time.Duration, topo Topology) string {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(seed, phase, topo)
	if err != nil {
		t.Fatalf("plan %q: %v", spec, err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPlanDeterministic(t *testing.T) {
	spec := "mixed + partition:shape=halves + partition:shape=majorities-ring + pause:target=random-candidate,every=7s,for=2s"
	a := planJSON(t, spec, 42, 2*time.Minute, etcdTopo)
	b := planJSON(t, spec, 42, 2*time.Minute, etcdTopo)
	if a != b {
		t.Fatalf("same seed, different plans:\n%s\n%s", a, b)
	}
	c := planJSON(t, spec, 43, 2*time.Minute, etcdTopo)
	if a == c {
		t.Fatalf("seeds 42 and 43 gave the same plan")
	}
	// The plan survives a JSON round trip unchanged (it is stored in config.json).
	var p Plan
	if err := json.Unmarshal([]byte(a), &p); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(p)
	if string(again) != a {
		t.Fatalf("plan JSON round trip changed it:\n%s\n%s", a, again)
	}
}

func TestPlanTimes(t *testing.T) {
	s, _ := Parse("pause:target=leader,every=10s,for=6s")
	p, err := s.Plan(5, time.Minute, etcdTopo)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Faults) < 4 {
		t.Fatalf("want about 6 occurrences in 60 s, got %d", len(p.Faults))
	}
	var prevEnd time.Duration
	for i, f := range p.Faults {
		if f.ID != i+1 {
			t.Errorf("fault %d has id %d", i, f.ID)
		}
		at, dur := time.Duration(f.At), time.Duration(f.For)
		if dur != 6*time.Second {
			t.Errorf("for = %s", dur)
		}
		if at < prevEnd {
			t.Errorf("occurrence %d starts at %s before the previous ended at %s", f.ID, at, prevEnd)
		}
		if at+dur > time.Minute {
			t.Errorf("occurrence %d ends after the phase: %s+%s", f.ID, at, dur)
		}
		if i > 0 {
			gap := at - time.Duration(p.Faults[i-1].At)
			if gap < 9*time.Second || gap > 11*time.Second {
				t.Errorf("period %s outside every=10s ± 10%%", gap)
			}
		}
		prevEnd = at + dur
		if f.Target != "leader" || f.Chosen != nil {
			t.Errorf("leader must stay live: target %q chosen %v", f.Target, f.Chosen)
		}
	}
	// at= and count= are honoured exactly.
	s, _ = Parse("kill:at=3s,every=5s,for=1s,count=2,jitter=0s")
	p, err = s.Plan(9, time.Minute, etcdTopo)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Faults) != 2 || time.Duration(p.Faults[0].At) != 3*time.Second || time.Duration(p.Faults[1].At) != 8*time.Second {
		t.Fatalf("got %+v", p.Faults)
	}
}

func TestPlanErrors(t *testing.T) {
	cases := []struct {
		spec      string
		phase     time.Duration
		topo      Topology
		wantInErr string
	}{
		{"pause:for=10s", 5 * time.Second, etcdTopo, "fault phase is only 5s"},
		{"pause:for=3xTTL,every=5s", time.Minute, etcdTopo, "must be longer than for"},
		{"pause:at=58s,for=5s", time.Minute, etcdTopo, "ends after the fault phase"},
		{"pause:target=node:c9", time.Minute, etcdTopo, `no node "c9"`},
		{"partition:shape=bridge,among=candidates", time.Minute, Topology{Candidates: []string{"c1", "c2"}, StoreNodes: etcdTopo.StoreNodes, StoreKind: "etcd", TTL: time.Second}, "bridge needs at least 3 nodes"},
		{"partition:shape=majorities-ring", time.Minute, Topology{Candidates: []string{"c1"}, StoreNodes: []string{"redis-1"}, StoreKind: "redis", TTL: time.Second}, "majorities-ring needs at least 3 nodes"},
		{"pause:target=store-leader", time.Minute, Topology{Candidates: []string{"c1"}, StoreNodes: []string{"redis-1"}, StoreKind: "redis", TTL: time.Second}, "etcd, zookeeper"},
		{"clock:target=store-node", time.Minute, Topology{Candidates: []string{"c1"}, StoreNodes: []string{"redis-1"}, StoreKind: "redis", TTL: time.Second}, "clock skew not supported for this node"},
		{"clock:target=store-node", time.Minute, etcdTopo, "clock skew not supported for this node"},
		{"clock:op=strobe,period=10s,for=2s", time.Minute, etcdTopo, "strobe period"},
		{"loss:peer=node:zz", time.Minute, etcdTopo, "no such node"},
		{"delay:target=node:etcd-1", time.Minute, etcdTopo, "delay hits candidates only"},
		{"clock:op=rate,rate=2,target=store-node", time.Minute, Topology{Candidates: []string{"c1"}, StoreNodes: []string{"postgres-1"}, StoreKind: "postgres", TTL: time.Second}, "op=rate runs candidates' clocks only"},
		{"delay:latency=500us", time.Minute, etcdTopo, "whole milliseconds"},
		{"delay:latency=1500us", time.Minute, etcdTopo, "latency=1500us: the proxy counts whole milliseconds, so it would run as 1ms"},
		{"delay:latency=10ms,latency-jitter=2.5ms", time.Minute, etcdTopo, "latency-jitter=2.5ms: the proxy counts whole milliseconds"},
		{"delay:latency=100ms,latency-jitter=200ms", time.Minute, etcdTopo, "larger than latency"},
		{"delay:latency=0.1xTTL,latency-jitter=0.2xTTL", time.Minute, etcdTopo, "larger than latency"},
		{"delay", time.Minute, Topology{Candidates: []string{"c1", "c2"}, TTL: time.Second}, "--store none"},
		{"reset", time.Minute, Topology{Candidates: []string{"c1", "c2"}, TTL: time.Second}, "--store none"},
		{"bandwidth:target=node:etcd-1", time.Minute, etcdTopo, "bandwidth hits candidates only"},
		{"slow-close:close-delay=1500us", time.Minute, etcdTopo, "close-delay=1500us: the proxy counts whole milliseconds, use e.g. 2ms"},
		{"half-open:close-after=0.0001xTTL", time.Minute, etcdTopo, "the proxy counts whole milliseconds"},
		{"evict", time.Minute, etcdTopo, `evict applies to store kubernetes only, not "etcd"`},
		{"evict:target=node:kube-apiserver", time.Minute, kubeTopo, "evict hits candidates only"},
	}
	for _, c := range cases {
		s, err := Parse(c.spec)
		if err != nil {
			t.Errorf("parse %q: %v", c.spec, err)
			continue
		}
		_, err = s.Plan(1, c.phase, c.topo)
		if err == nil || !strings.Contains(err.Error(), c.wantInErr) {
			t.Errorf("plan %q: error %v, want it to contain %q", c.spec, err, c.wantInErr)
		}
	}
	// evict of the leader on kubernetes is fine, and every kind's store list names stores.
	s, _ := Parse("partition:shape=leader-from-store,at=1xTTL,for=6xTTL,jitter=0s; evict:at=2xTTL,for=5xTTL,jitter=0s")
	if p, err := s.Plan(1, time.Minute, kubeTopo); err != nil || len(p.Faults) != 2 || p.Faults[1].Target != TargetLeader {
		t.Fatalf("evict plan on kubernetes: %+v, %v", p, err)
	}
	for _, k := range Kinds() {
		for _, st := range k.Stores {
			if _, ok := storekinds.Lookup(st); !ok {
				t.Errorf("kind %s names unknown store %q", k.Name, st)
			}
		}
	}
	// Clock skew of a PostgreSQL node is fine.
	pg := Topology{Candidates: []string{"c1"}, StoreNodes: []string{"postgres-1"}, StoreKind: "postgres", TTL: time.Second}
	s, _ = Parse("clock:target=store-node,delta=+5s")
	if _, err := s.Plan(1, time.Minute, pg); err != nil {
		t.Fatal(err)
	}
}

func TestPlanSeededChoices(t *testing.T) {
	s, _ := Parse("partition:shape=store-majority,every=5s,for=2s")
	p, err := s.Plan(3, time.Minute, etcdTopo)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range p.Faults {
		if len(f.Chosen) != 1 {
			t.Fatalf("minority of 3 must be 1 node, got %v", f.Chosen)
		}
		seen[f.Chosen[0]] = true
		// Grudge: the minority node and the other two cut from each other, both ways.
		m := f.Chosen[0]
		for _, o := range etcdTopo.StoreNodes {
			if o == m {
				continue
			}
			if !f.Grudge.Drops(m, o) || !f.Grudge.Drops(o, m) {
				t.Fatalf("grudge %v does not cut %s from %s", f.Grudge, m, o)
			}
		}
		for _, c := range etcdTopo.Candidates {
			if len(f.Grudge[c]) > 0 {
				t.Fatalf("store-majority must leave candidates alone: %v", f.Grudge)
			}
		}
	}
	if len(seen) < 2 {
		t.Fatalf("over %d occurrences the seeded minority never changed: %v", len(p.Faults), seen)
	}
	// TTL multiples in params are resolved in the plan.
	s, _ = Parse("clock:delta=-3xTTL")
	p, _ = s.Plan(1, time.Minute, etcdTopo)
	if p.Faults[0].Params["delta"] != "-6s" {
		t.Fatalf("delta not resolved: %v", p.Faults[0].Params)
	}
}
