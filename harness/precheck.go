package harness

import (
	"fmt"

	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// precheckTopology refuses, before anything starts, what setup would refuse only after the
// network and store are up: a store node count out of range, a schedule that cannot be
// planned on the nominal topology (the real one has the same names), as `nemesis plan`
// does, a given plan made for other nodes, and plans above the caps. Store-less runs are
// checked too, on their candidates alone.
func precheckTopology(cfg *Config, p prepared) error {
	var storeNodes []string
	if !cfg.storeless() {
		kind, err := stores.ParseKind(cfg.Store)
		if err != nil {
			return nil // Config.Validate names a bad store
		}
		if storeNodes, err = stores.NominalNodes(kind, cfg.StoreNodes); err != nil {
			return err
		}
	}
	if cfg.Nodes < 1 || cfg.Nodes > maxPrecheckNodes || cfg.TTL <= 0 || cfg.FaultTime <= 0 {
		return nil // Config.Validate names these
	}
	var cands []string
	for i := 1; i <= cfg.Nodes; i++ {
		cands = append(cands, candidateName(i))
	}
	topo := nemesis.Topology{Candidates: cands, StoreNodes: storeNodes, StoreKind: cfg.Store, TTL: cfg.TTL}
	if cfg.Plan != nil {
		_, err := givenPlan(*cfg.Plan, topo)
		return err // its content: Config.Validate (Plan.CheckGiven)
	}
	if p.schedule.Empty() {
		return nil
	}
	if _, err := p.schedule.Plan(p.seed, cfg.FaultTime, topo); err != nil {
		return fmt.Errorf("--nemesis %s: %w", capEcho(cfg.Nemesis), err)
	}
	return nil // Plan applies the caps (nemesis.MaxPlannedFaults, MaxConcurrentFaults)
}

// maxPrecheckNodes: a node count above it is Config.Validate's to refuse, not ours to name.
const maxPrecheckNodes = 1000

// capEcho quotes user input for an error message, cut to a readable length.
func capEcho(s string) string {
	const max = 200
	if len(s) > max {
		return fmt.Sprintf("%q… (%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}
