// Package candidates holds the election recipes, one file each. A recipe file holds only
// election logic; candidates/runtime implements the candidate contract around it.
package candidates

import "github.com/splitbrain-chaos/splitbrain/candidates/runtime"

// The registry: one line per recipe.
var recipes = []runtime.Spec{
	etcdElection,
	zookeeperSeq,
	postgresAdvisory,
	redisSetNX,
	redisSplitIncr,
	naiveLease,
}

func init() {
	for _, s := range recipes {
		runtime.Register(s)
	}
}

// Lookup returns the recipe called name (importing this package registers all recipes).
func Lookup(name string) (runtime.Spec, error) { return runtime.Lookup(name) }

// LookupFor returns recipe name and checks it fits store.
func LookupFor(name, store string) (runtime.Spec, error) { return runtime.LookupFor(name, store) }

// Specs lists every recipe, sorted by name.
func Specs() []runtime.Spec { return runtime.Specs() }
