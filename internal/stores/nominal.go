package stores

import (
	"fmt"

	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// NominalNodes checks a node count for kind (0 = the default) and returns the node names a
// cluster of that size will have, so a fault schedule can be planned (and refused) before
// anything starts. The error names the --store-nodes flag.
func NominalNodes(kind Kind, n int) ([]string, error) {
	d, ok := storekinds.Lookup(string(kind))
	if !ok {
		return nil, fmt.Errorf("unknown store %q", kind)
	}
	return d.NodeNames(n)
}
