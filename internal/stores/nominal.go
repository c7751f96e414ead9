package stores

import "fmt"

// NominalNodes checks a node count for kind (0 = the default) and returns the node names a
// cluster of that size will have, so a fault schedule can be planned (and refused) before
// anything starts. The error names the --store-nodes flag.
func NominalNodes(kind Kind, n int) ([]string, error) {
	info, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("unknown store %q", kind)
	}
	if n == 0 {
		n = info.defNodes
	}
	if n < info.minNodes || n > info.maxNod {
		if info.minNodes == info.maxNod {
			return nil, fmt.Errorf("--store-nodes %d: store %s runs exactly %d node(s); drop --store-nodes", n, kind, info.minNodes)
		}
		return nil, fmt.Errorf("--store-nodes %d: store %s supports %d..%d nodes", n, kind, info.minNodes, info.maxNod)
	}
	if info.names != nil {
		return append([]string(nil), info.names...), nil
	}
	if info.maxNod == 1 {
		return []string{info.nodeName}, nil
	}
	return nodeNames(info.nodeName, n), nil
}
