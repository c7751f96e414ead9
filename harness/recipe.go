package harness

import (
	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"

	// The recipes register themselves with the runtime's registry.
	_ "github.com/splitbrain-chaos/splitbrain/candidates"
)

// recipeInfo is what the run needs to know about a Go recipe.
type recipeInfo struct {
	Name       string
	Store      string
	ClockAware bool
	Negative   bool
	Timing     runtime.Timing
}

// lookupRecipe finds the recipe and checks it runs on the configured store; the error names
// the recipes that do.
func lookupRecipe(name, store string, cfg *Config) (recipeInfo, error) {
	spec, err := runtime.LookupFor(name, store)
	if err != nil {
		return recipeInfo{}, err
	}
	t := spec.Timing(contract.Config{Store: store, LeaseTTL: cfg.TTL, WriteInterval: cfg.WriteInterval,
		RenewInterval: cfg.RenewInterval, RetryInterval: cfg.RetryInterval})
	return recipeInfo{Name: spec.Name, Store: spec.Store, ClockAware: spec.ClockAware, Negative: spec.Negative, Timing: t}, nil
}

// RecipeNames lists the Go recipes a run can use.
func RecipeNames() []string { return runtime.Names() }
