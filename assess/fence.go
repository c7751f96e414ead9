package assess

import (
	"fmt"
	"math"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// ReasonFenceNotExercised: a fence check's run was valid, but no request the fault affects
// (exercises) reached the fence device while it was on, so the broken device was never put
// to the test.
const ReasonFenceNotExercised = "fence-not-exercised"

// exercises says whether a fence request meets a fault of kind: the lying device lies only
// about a power-off; an unreachable or slow one answers no request, or late, so a node's
// power state read (fence_docker's first step, after which it gives up on a silent device)
// meets it too. A list of the device's nodes is no step of a fence.
func exercises(kind string, op checkers.FenceOp) bool {
	if kind == "fence-lying" {
		return op.Action == history.FenceOff
	}
	return op.Target != ""
}

// fenceUnexercised says why the fence fault kind of a valid run had no effect, or "" when a
// request it affects was made while one of its occurrences was in effect. The harness's
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
			if exercises(kind, op) && op.T >= f.StartT && op.T <= end {
				return ""
			}
		}
	}
	if applied == 0 {
		return fmt.Sprintf("the %s fault never took effect: the fence device was not tested", kind)
	}
	what := "request"
	if kind == "fence-lying" {
		what = "power-off"
	}
	return fmt.Sprintf("no %s reached the fence device while the %s fault was on (%d requests in the run): "+
		"the candidate never fenced the paused leader, so the check proves nothing about its fencing", what, kind, r.Fences.OpsTotal)
}
