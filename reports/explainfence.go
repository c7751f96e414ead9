package reports

import (
	"fmt"
	"slices"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// maxFenceSteps bounds the fence steps one explanation tells (the latest before the reason).
const maxFenceSteps = 6

// fenceSteps adds the fence device's requests that bear on the story: those sent by or
// naming its nodes, from shortly before its window up to the reason, with their answers
// and the target's real end, so a verdict on a STONITH run names the fence step that made
// it (a power-off acknowledged while the node still ran, one never answered).
func (x *story) fenceSteps() {
	ops := x.r.Fences.Ops
	if len(ops) == 0 {
		return
	}
	until := max(x.reason.T, x.to)
	lookback := max(2*int64(x.r.Params.LeaseTTL), int64(5*time.Second))
	var picked []checkers.FenceOp
	for _, op := range ops {
		if op.T > until || op.T < x.from-lookback {
			continue
		}
		if !slices.Contains(x.nodes, op.By) && !slices.Contains(x.nodes, op.Target) {
			continue
		}
		picked = append(picked, op)
	}
	if len(picked) > maxFenceSteps {
		// fence_docker reads the power state before and after every action: the power
		// actions are the story, so the reads go first when steps must be left out.
		actions := slices.DeleteFunc(slices.Clone(picked), func(op checkers.FenceOp) bool { return !isPowerAction(op.Action) })
		if len(actions) > 0 {
			picked = actions
		}
	}
	if len(picked) > maxFenceSteps {
		picked = picked[len(picked)-maxFenceSteps:]
	}
	for _, op := range picked {
		x.involve(op.By, op.Target)
		by := op.By
		if by == "" {
			by = "a sender outside the run"
		}
		switch {
		case isPowerAction(op.Action):
			x.at(op.T, "%s asked the fence device to power %s %s (fence %d)", by, op.Target, op.Action, op.ID)
		case op.Target == "":
			x.at(op.T, "%s asked the fence device for its nodes (fence %d)", by, op.ID)
		default:
			x.at(op.T, "%s asked the fence device for %s's power state (fence %d)", by, op.Target, op.ID)
		}
		if op.ReplyT == 0 {
			x.note("fence %d got no answer before the run ended", op.ID)
			continue
		}
		switch {
		case op.AliveAtAnswer && op.DeathT > 0:
			x.at(op.ReplyT, "the device answered %s off (fence %d, %s) while %s still ran", op.Target, op.ID, op.Result, op.Target)
			x.at(op.DeathT, "%s's process ended, %s after that answer", op.Target, fmtDur(op.DeathT-op.ReplyT))
		case op.AliveAtAnswer:
			x.at(op.ReplyT, "the device answered %s off (fence %d, %s) while %s still ran; the request never ended it", op.Target, op.ID, op.Result, op.Target)
		case op.Power != "":
			x.at(op.ReplyT, "the device confirmed %s %s (fence %d)", op.Target, op.Power, op.ID)
		default:
			x.at(op.ReplyT, "fence %d was %s%s", op.ID, op.Result, reasonSuffix(op.Reason))
		}
		if op.Action == "off" && (op.Power != "off" || op.AliveAtAnswer) && op.By != "" {
			for _, t := range x.r.Tenures.Tenures {
				if t.Node == op.By && t.StartT >= op.T && t.StartT <= until {
					x.note("%s led (token %d) although %s was not confirmed dead by fence %d", op.By, t.Token, op.Target, op.ID)
					break
				}
			}
		}
	}
}

func isPowerAction(action string) bool {
	return action == history.FenceOff || action == history.FenceOn
}

func reasonSuffix(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf(" (%s)", s)
}
