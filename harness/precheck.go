package harness

import (
	"errors"
	"fmt"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
	"github.com/splitbrain-chaos/splitbrain/workloads"
)

// prepared holds what setup needs from other registries, resolved before anything starts.
type prepared struct {
	recipe   recipeInfo
	schedule nemesis.Schedule
	seed     int64
	workload workloads.Workload
	until    *checkers.Goal // Config.Until parsed; nil: a time-ended run
	// nominal is the schedule planned on the nominal topology (nil for an empty schedule or
	// a given plan): the run carries it out when its real topology is the same.
	nominal *nemesis.Plan
}

// prepare resolves the recipe, the nemesis schedule and the workload, so bad names fail
// before a single container starts.
func prepare(cfg *Config) (prepared, error) {
	var p prepared
	var errs []error
	var err error
	if cfg.Recipe != "" && cfg.CandidateCmd == "" && cfg.CandidateImage == "" {
		if p.recipe, err = lookupRecipe(cfg.Recipe, cfg.Store, cfg); err != nil {
			errs = append(errs, err)
		}
	}
	p.seed = cfg.Seed
	if p.seed == 0 {
		p.seed = time.Now().UnixNano()
		cfg.Seed = p.seed
	}
	spec := cfg.Nemesis
	if cfg.Cycles > 0 {
		if spec, err = nemesis.PacedSpec(cfg.Nemesis, cfg.Cycles); err != nil {
			errs = append(errs, fmt.Errorf("--nemesis %q: %w", cfg.Nemesis, err))
		}
	}
	if p.schedule, err = nemesis.Parse(spec); err != nil {
		errs = append(errs, fmt.Errorf("--nemesis: %w", err))
	} else {
		if cfg.storeless() {
			if err := checkStoreless(p.schedule); err != nil {
				errs = append(errs, fmt.Errorf("--nemesis %q: %w", cfg.Nemesis, err))
			}
		}
		if why := p.recipe.NoClockFaults; why != "" {
			if err := checkNoClock(p.schedule, p.recipe.Name, why); err != nil {
				errs = append(errs, fmt.Errorf("--nemesis %q: %w", cfg.Nemesis, err))
			}
		}
		// A Go recipe declares its steps; an external candidate's are unknown, so its step
		// triggers are taken on trust.
		if p.recipe.Name != "" {
			if err := p.schedule.CheckSteps(p.recipe.Name, p.recipe.Steps); err != nil {
				errs = append(errs, fmt.Errorf("--nemesis: %w", err))
			}
		}
		if p.until = parseUntil(cfg.Until); p.until != nil {
			if err := checkUntil(*p.until, p.schedule); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if p.nominal, err = precheckTopology(cfg, p); err != nil {
		errs = append(errs, err)
	}
	if p.workload, err = workloads.New(cfg.Workload, workloads.Options{
		TTL: cfg.TTL, HandoffEvery: cfg.HandoffEvery, HandoffPause: cfg.HandoffPause,
	}); err != nil {
		errs = append(errs, fmt.Errorf("--workload: %w", err))
	}
	return p, errors.Join(errs...)
}

// precheckTopology refuses, before anything starts, what setup would refuse only after the
// network and store are up: a store node count out of range, a schedule that cannot be
// planned on the nominal topology (the real one has the same names), as `nemesis plan`
// does, a given plan made for other nodes, and plans above the caps. Store-less runs are
// checked too, on their candidates alone.
func precheckTopology(cfg *Config, p prepared) (*nemesis.Plan, error) {
	var storeNodes []string
	if !cfg.storeless() {
		kind, err := stores.ParseKind(cfg.Store)
		if err != nil {
			return nil, nil // Config.Validate names a bad store
		}
		if storeNodes, err = stores.NominalNodes(kind, cfg.StoreNodes); err != nil {
			return nil, err
		}
	}
	if cfg.Nodes < 1 || cfg.Nodes > maxPrecheckNodes || cfg.TTL <= 0 || cfg.FaultTime <= 0 {
		return nil, nil // Config.Validate names these
	}
	var cands []string
	for i := 1; i <= cfg.Nodes; i++ {
		cands = append(cands, candidateName(i))
	}
	topo := nemesis.Topology{Candidates: cands, StoreNodes: storeNodes, StoreKind: cfg.Store, TTL: cfg.TTL}
	if cfg.Plan != nil {
		_, err := givenPlan(*cfg.Plan, topo)
		return nil, err // its content: Config.Validate (Plan.CheckGiven)
	}
	if p.schedule.Empty() {
		return nil, nil
	}
	plan, err := p.schedule.Plan(p.seed, cfg.FaultTime, topo)
	if err != nil {
		return nil, fmt.Errorf("--nemesis %s: %w", capEcho(cfg.Nemesis), err)
	}
	return &plan, nil // Plan applies the caps (nemesis.MaxPlannedFaults, MaxConcurrentFaults)
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
