//go:build !core

// The core build leaves the heavy stores' launchers nil (unlinked_core.go).

package stores

import (
	"slices"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// TestEveryKindHasALauncher keeps the definitions (internal/storekinds) and the launchers
// one set: a kind without a launcher would pass every check and fail only when started.
func TestEveryKindHasALauncher(t *testing.T) {
	for _, name := range storekinds.Names() {
		if launchers[Kind(name)] == nil {
			t.Errorf("store kind %s has no launcher: add it to launchers in stores.go", name)
		}
		d, _ := storekinds.Lookup(name)
		for _, r := range d.Roles() {
			if !slices.Contains(images.Roles, images.Role(r)) {
				t.Errorf("store kind %s runs image role %q, which internal/images does not build", name, r)
			}
		}
	}
	for k := range launchers {
		if _, ok := storekinds.Lookup(string(k)); !ok {
			t.Errorf("launcher for %s has no definition in internal/storekinds", k)
		}
	}
	// The Kubernetes launcher names its nodes with its own constants.
	names, err := NominalNodes(storekinds.Kubernetes, 0)
	if want := []string{kubeEtcdNode, kubeAPIServerNode, kubeControllerNode}; err != nil || !slices.Equal(names, want) {
		t.Errorf("kubernetes node names %v (%v), launcher uses %v", names, err, want)
	}
}
