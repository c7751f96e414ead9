package harness

import (
	"time"

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

// FailoverBoundFor is the crash-failover bound the checkers judge a run of cfg by: the
// recipe's (its timing at cfg's TTL and intervals), cfg.FailoverBound when set, or for an
// external candidate TTL + retry + 1s. The matrix derives its rows' bounds from it.
func FailoverBoundFor(cfg Config) (time.Duration, error) {
	c := cfg
	if err := c.Validate(); err != nil {
		return 0, err
	}
	if c.FailoverBound > 0 {
		return c.FailoverBound, nil
	}
	if c.Recipe != "" {
		r, err := lookupRecipe(c.Recipe, c.Store, &c)
		if err != nil {
			return 0, err
		}
		if r.Timing.FailoverBound > 0 {
			return r.Timing.FailoverBound, nil
		}
	}
	return c.TTL + c.RetryInterval + time.Second, nil
}
