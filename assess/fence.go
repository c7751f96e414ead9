package assess

import (
	"fmt"
	"math"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// ReasonFenceNotExercised: a fence check's run was valid, but no fencing attempt reached the
// fence device while its fault was on, so the broken device was never put to the test.
const ReasonFenceNotExercised = "fence-not-exercised"

// fenceUnexercised says why the fence fault kind of a valid run had no effect, or "" when a
// fencing attempt met one of its occurrences. The harness's nothing-faulted guard does not
// see this: a fence fault takes effect on the device whether or not anyone calls it.
//
// An attempt is a power-off asked while the fault was on; under an unreachable or slow
// device, also a status read of a named node that the fault swallowed or held: a fence
// agent reads the target's power state before it powers it off (fence_docker inspects the
// container first) and gives up when that read gets no answer, so its power-off never
// reaches the device. A list of every node is not one: Pacemaker's monitor of the device
// sends the same request. A lying device lies only about power-offs.
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
			if op.T < f.StartT || op.T > end {
				continue
			}
			if op.Action == history.FenceOff || kind != "fence-lying" && op.Action == history.FenceStatus && op.Target != "" && op.By != "" {
				return ""
			}
		}
	}
	if applied == 0 {
		return fmt.Sprintf("the %s fault never took effect: the fence device was not tested", kind)
	}
	return fmt.Sprintf("no fencing attempt reached the fence device while the %s fault was on (%d requests in the run): "+
		"the candidate never tried to fence the paused leader, so the check proves nothing about its fencing", kind, r.Fences.OpsTotal)
}
