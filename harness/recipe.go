package harness

import (
	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
)

// recipeInfo is what the run needs to know about a Go recipe.
type recipeInfo struct {
	runtime.Info
	Timing runtime.Timing
}

// lookupRecipe finds the recipe in candidates.Registry and checks it runs on the configured
// store; the error names the recipes that do.
func lookupRecipe(name, store string, cfg *Config) (recipeInfo, error) {
	def, err := candidates.Registry.LookupFor(name, store)
	if err != nil {
		return recipeInfo{}, err
	}
	// LeaderWork as the candidate will see it (contract.ParseEnv: the write interval unless
	// given), so a recipe whose timing depends on it computes the same bounds here.
	work := cfg.WriteInterval
	if cfg.LeaderWorkSet {
		work = cfg.LeaderWork
	}
	t := def.TimingFor(contract.Config{Store: store, LeaseTTL: cfg.TTL, WriteInterval: cfg.WriteInterval,
		LeaderWork: work, RenewInterval: cfg.RenewInterval, RetryInterval: cfg.RetryInterval})
	return recipeInfo{Info: def.Describe(), Timing: t}, nil
}

// RecipeNames lists the Go recipes a run can use.
func RecipeNames() []string { return candidates.Registry.Names() }
