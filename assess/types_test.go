package assess

import (
	"testing"

	"github.com/splitbrain-chaos/splitbrain/assess/scorecard"
	"github.com/splitbrain-chaos/splitbrain/harness"
)

// The leaf spells the harness's verdicts itself (it imports nothing of the module): they
// must stay the same strings.
func TestScorecardVerdictsAreTheHarnesses(t *testing.T) {
	for _, p := range [][2]string{
		{scorecard.VerdictValid, harness.VerdictValid},
		{scorecard.VerdictInvalid, harness.VerdictInvalid},
		{scorecard.VerdictUnknown, harness.VerdictUnknown},
	} {
		if p[0] != p[1] {
			t.Errorf("scorecard verdict %q, harness %q", p[0], p[1])
		}
	}
}
