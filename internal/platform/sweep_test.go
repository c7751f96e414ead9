package platform

import (
	"strings"
	"testing"
)

// A pool's network that another run's containers still hold says which run, and the order
// that works: that run first, then this one again.
func TestNetworkInUseHint(t *testing.T) {
	n := NetworkInUse{Network: "sb-pool-a", Runs: []string{"run-1", "run-2"}, Containers: []string{"run-1-c1", "run-1-c2", "run-2-c1"}}
	want := "network sb-pool-a is still used by runs run-1, run-2 (containers run-1-c1, run-1-c2, run-2-c1): " +
		"remove them first (splitbrain clean --run run-1 && splitbrain clean --run run-2), then clean this run again"
	if got := n.Hint(); got != want {
		t.Errorf("hint\n%q\nwant\n%q", got, want)
	}
	n = NetworkInUse{Network: "sb-pool-a", Containers: []string{"someones-box"}}
	if got := n.Hint(); !strings.Contains(got, "containers someones-box, not splitbrain's") || strings.Contains(got, "clean --run") {
		t.Errorf("foreign containers: %q", got)
	}
}
