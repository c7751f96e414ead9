package harness

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// Sanity caps of a fault schedule: beyond them a run tests the harness, not the recipe.
const (
	maxPlannedFaults    = 1000
	maxConcurrentFaults = 32
)

// precheckTopology refuses, before anything starts, what setup would refuse only after the
// network and store are up: a store node count out of range, and a schedule that cannot be
// planned on the nominal topology (the real one has the same names), as `nemesis plan` does.
func precheckTopology(cfg *Config, p prepared) error {
	if cfg.storeless() {
		return nil
	}
	kind, err := stores.ParseKind(cfg.Store)
	if err != nil {
		return nil // Config.Validate names a bad store
	}
	storeNodes, err := stores.NominalNodes(kind, cfg.StoreNodes)
	if err != nil {
		return err
	}
	if p.schedule.Empty() {
		return nil
	}
	var cands []string
	for i := 1; i <= cfg.Nodes; i++ {
		cands = append(cands, candidateName(i))
	}
	topo := nemesis.Topology{Candidates: cands, StoreNodes: storeNodes, StoreKind: cfg.Store, TTL: cfg.TTL}
	plan, err := p.schedule.Plan(p.seed, cfg.FaultTime, topo)
	if err != nil {
		return fmt.Errorf("--nemesis %s: %w", capEcho(cfg.Nemesis), err)
	}
	return planSanity(plan)
}

// planSanity caps the number of planned faults and how many are in effect at once.
func planSanity(plan nemesis.Plan) error {
	if n := len(plan.Faults); n > maxPlannedFaults {
		return fmt.Errorf("--nemesis plans %d faults, more than %d: use fewer faults or a longer every=", n, maxPlannedFaults)
	}
	type edge struct {
		at    time.Duration
		delta int
	}
	var edges []edge
	for _, f := range plan.Faults {
		edges = append(edges, edge{time.Duration(f.At), 1}, edge{time.Duration(f.At) + time.Duration(f.For), -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // an end at t frees its slot before a start at t
	})
	open, peak := 0, 0
	for _, e := range edges {
		open += e.delta
		peak = max(peak, open)
	}
	if peak > maxConcurrentFaults {
		return errors.New(fmt.Sprintf("--nemesis has %d faults in effect at once, more than %d: spread them out (every=, at=) or use fewer", peak, maxConcurrentFaults))
	}
	return nil
}

// capEcho quotes user input for an error message, cut to a readable length.
func capEcho(s string) string {
	const max = 200
	if len(s) > max {
		return fmt.Sprintf("%q… (%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}
