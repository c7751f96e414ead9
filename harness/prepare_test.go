package harness

import (
	"reflect"
	"testing"
	"time"
)

// A run checks its configuration once: Prepare plans the schedule on the nominal
// topology, and the run carries out that plan (a copy: the run may not change the
// prepared one) when its real nodes have the nominal names.
func TestPreparedRunUsesTheNominalPlan(t *testing.T) {
	p, err := Prepare(Config{Store: "none", Recipe: "raft", FaultTime: 30 * time.Second, Nemesis: "pause-leader", Seed: 7, StoreRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	nominal := p.prep.nominal
	if nominal == nil || len(nominal.Faults) == 0 {
		t.Fatalf("Prepare left no plan of pause-leader on the nominal topology: %+v", nominal)
	}
	r := &run{cfg: p.Config(), prep: p.prep}
	plan, err := r.planFaults()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan, *nominal) {
		t.Errorf("the run planned anew:\n got %+v\nwant %+v", plan, *nominal)
	}
	if &plan.Faults[0] == &nominal.Faults[0] {
		t.Error("the run's plan shares its faults with the prepared one")
	}
	// Real nodes with other names get a plan of their own, from the same function.
	r.cfg.Nodes++
	if plan, err = r.planFaults(); err != nil || len(plan.Topology.Candidates) != len(nominal.Topology.Candidates)+1 {
		t.Errorf("a run with another topology kept the nominal plan: %+v, %v", plan.Topology, err)
	}
	if p.Config().Seed != 7 || p.Config().Warmup == 0 {
		t.Errorf("Config() is not the validated configuration with its defaults: %+v", p.Config())
	}
}
