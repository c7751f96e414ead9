package suite

import (
	"testing"

	"github.com/splitbrain-chaos/splitbrain/internal/boundtest"
)

// TestOneBoundTolerance: the smoke tier's failover overrun factor and the chaos tests' are
// one rule (issue 30 item 5), kept in two places only so the binary does not link testing.
func TestOneBoundTolerance(t *testing.T) {
	if SmokeBoundTolerance != boundtest.Tolerance {
		t.Errorf("suite.SmokeBoundTolerance %d, boundtest.Tolerance %d: one rule, one factor", SmokeBoundTolerance, boundtest.Tolerance)
	}
}
