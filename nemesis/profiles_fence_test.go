package nemesis

import (
	"testing"
	"time"
)

// The fence profiles break the device from the leader pause's start, on a trigger every
// candidate gives, and fence-lying's kill comes after the paused leader wakes.
func TestFenceProfiles(t *testing.T) {
	topo := Topology{Candidates: []string{"c1", "c2", "c3"}, StoreNodes: []string{"etcd-1", "etcd-2", "etcd-3"}, StoreKind: "etcd", TTL: 2 * time.Second}
	for _, kind := range []string{"fence-unreachable", "fence-slow", "fence-lying"} {
		name := kind + "-pause-leader"
		if !isProfile(name) || !HasPaced(name) {
			t.Fatalf("%s: no profile or no paced form", name)
		}
		s, err := Parse(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan, err := s.Plan(1, time.Minute, topo)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var pause, fence *PlannedFault
		for i := range plan.Faults {
			f := &plan.Faults[i]
			switch {
			case f.Kind == "pause" && pause == nil:
				pause = f
			case f.Kind == kind && fence == nil:
				fence = f
			}
		}
		if pause == nil || fence == nil || pause.At != fence.At || fence.For <= pause.For {
			t.Fatalf("%s: the fence fault must start with the pause and outlast it: %+v %+v", name, pause, fence)
		}
		spec, err := PacedSpec(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := Parse(spec)
		if err != nil {
			t.Fatalf("%s paced %q: %v", name, spec, err)
		}
		pp, err := ps.Plan(1, time.Minute, topo)
		if err != nil {
			t.Fatalf("%s paced: %v", name, err)
		}
		if len(pp.Triggers) != 2 || pp.Triggers[0].On != "write:3" || pp.Triggers[1].On != "fault-start" || pp.Triggers[1].Fault.Kind != kind {
			t.Fatalf("%s paced: want the pause on write:3 and %s on its fault-start, got %+v", name, kind, pp.Triggers)
		}
		if kind == "fence-lying" {
			lag, err := time.ParseDuration(pp.Triggers[1].Fault.Params["lag"])
			if err != nil || lag <= time.Duration(pp.Triggers[0].Fault.For) {
				t.Errorf("%s: lag %q must outlast the pause %s, or the lie is over before the leader wakes", name, pp.Triggers[1].Fault.Params["lag"], pp.Triggers[0].Fault.For)
			}
		}
	}
}
