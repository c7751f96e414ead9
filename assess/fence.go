package assess

import (
	"fmt"
	"math"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// ReasonFenceNotExercised: a fence check's run was valid, but no power-off reached the
// fence device while its fault was on, so the broken device was never put to the test.
const ReasonFenceNotExercised = "fence-not-exercised"

// fenceUnexercised says why the fence fault kind of a valid run had no effect, or "" when a
// power-off was asked while one of its occurrences was in effect. The harness's
// nothing-faulted guard does not see this: a fence fault takes effect on the device whether
// or not anyone calls it.
func fenceUnexercised(kind string, r *checkers.Results) string {
	applied := 0
	for _, f := range r.Faults {
		if f.Kind != kind || f.Error != "" {
			continue
		}
		applied++
		end := f.EndT
		if f.Open || end == 0 {
			end = math.MaxInt64
		}
		for _, op := range r.Fences.Ops {
			if op.Action == history.FenceOff && op.T >= f.StartT && op.T <= end {
				return ""
			}
		}
	}
	if applied == 0 {
		return fmt.Sprintf("the %s fault never took effect: the fence device was not tested", kind)
	}
	return fmt.Sprintf("no power-off reached the fence device while the %s fault was on (%d requests in the run): "+
		"the candidate never fenced the paused leader, so the check proves nothing about its fencing", kind, r.Fences.OpsTotal)
}
