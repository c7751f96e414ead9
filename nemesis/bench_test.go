package nemesis

import (
	"testing"
	"time"
)

// Planning runs once per run; it must stay negligible even for long, dense schedules.
func BenchmarkPlanMixed10min(b *testing.B) {
	s, err := Parse("mixed + loss + partition:shape=majorities-ring,every=3s,for=1s + pause:target=random-candidate,every=2s,for=1s")
	if err != nil {
		b.Fatal(err)
	}
	topo := Topology{Candidates: []string{"c1", "c2", "c3", "c4", "c5"}, StoreNodes: []string{"etcd-1", "etcd-2", "etcd-3", "etcd-4", "etcd-5"}, StoreKind: "etcd", TTL: 2 * time.Second}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Plan(1, 10*time.Minute, topo); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseProfileMixed(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("mixed"); err != nil {
			b.Fatal(err)
		}
	}
}
