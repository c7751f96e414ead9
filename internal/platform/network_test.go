package platform

import (
	"net/netip"
	"testing"
)

// Fixed addresses come from the lower half of the run's /24, the engine's own from the
// upper half: they never meet, and a node keeps its address across restarts.
func TestFixedAddressesStayBelowTheEnginesRange(t *testing.T) {
	n := &Network{Subnet: netip.MustParsePrefix("198.19.7.0/24")}
	if got := dynamicRange(n.Subnet); got != netip.MustParsePrefix("198.19.7.128/25") {
		t.Fatalf("the engine's range is %v, want 198.19.7.128/25", got)
	}
	first, ok := n.nextAddr()
	if !ok || first != netip.MustParseAddr("198.19.7.2") {
		t.Fatalf("first fixed address %v (%v), want 198.19.7.2 (.1 is the gateway)", first, ok)
	}
	count := 1
	for {
		a, ok := n.nextAddr()
		if !ok {
			break
		}
		if dynamicRange(n.Subnet).Contains(a) {
			t.Fatalf("fixed address %v inside the engine's range", a)
		}
		count++
	}
	if count != 126 {
		t.Errorf("%d fixed addresses, want 126 (.2 to .127)", count)
	}
	n.releaseAddr(netip.MustParseAddr("198.19.7.40"))
	if a, ok := n.nextAddr(); !ok || a != netip.MustParseAddr("198.19.7.40") {
		t.Errorf("after .40's node went, the next address is %v (%v), want .40 again", a, ok)
	}
}
