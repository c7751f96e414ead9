package checkers

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// FenceOp is one request to the run's fence device (fence-request) with its answer
// (fence-reply) and, for a power-off, when the target's process really ended.
type FenceOp struct {
	ID     int    `json:"id"`
	By     string `json:"by,omitempty"` // the requesting candidate ("" = not one of the run's)
	Target string `json:"target"`
	Action string `json:"action"` // off | on | status
	T      int64  `json:"t"`      // request received
	// ReplyT and Result: the device's answer (done, refused, failed, dropped, acknowledged);
	// 0 and "" when the history has none (the run ended first).
	ReplyT int64  `json:"reply_t,omitempty"`
	Result string `json:"result,omitempty"`
	Power  string `json:"power,omitempty"`
	Reason string `json:"reason,omitempty"`
	// DeathT (off): when the target's process ended by this request (its kill, or the exit
	// after a power-off the device carried out), or the exit before it when the target was
	// already down; 0 = the request did not end it (dropped, refused, failed, or a lie whose
	// late power-off never came), whatever ended it later.
	DeathT int64 `json:"death_t,omitempty"`
	// AliveAtAnswer (off): the device answered "off" while the target's process still ran.
	AliveAtAnswer bool `json:"alive_at_answer,omitempty"`
}

// maxFenceOps bounds the ops results.json lists: the first and the last half of it. Findings
// and counts cover every request; a flood of requests must not grow results.json past what
// its readers take (runfile.MaxJSON).
const maxFenceOps = 400

// FenceResult is the fences section: the requests to the fence device, in request order
// (the first and last maxFenceOps/2 when there were more).
type FenceResult struct {
	Ops []FenceOp `json:"ops"`
	// OpsTotal: requests in the history; OpsOmitted: those left out of Ops, between its
	// first and its last half.
	OpsTotal   int `json:"ops_total"`
	OpsOmitted int `json:"ops_omitted,omitempty"`
	// OffsConfirmed: power-offs answered off after the target's process had ended.
	OffsConfirmed int `json:"offs_confirmed"`
	// OffsUnconfirmed: power-offs that got no answer, a refusal or a failure.
	OffsUnconfirmed int `json:"offs_unconfirmed"`
	// OffsAcknowledgedAlive: power-offs answered off while the target still ran.
	OffsAcknowledgedAlive int `json:"offs_acknowledged_alive"`
}

func (s *FenceResult) reset() { *s = FenceResult{Ops: []FenceOp{}} }

// check pairs requests with answers and exits. Its reasons are findings: the safety
// outcome of a fence shows in the resource's decisions and the tenures, judged elsewhere.
func (s *FenceResult) check(_ context.Context, a *analysis, rl *reasonList) {
	s.reset()
	byID := map[int]int{}
	running := map[string]bool{}
	lastExit := map[string]int64{}
	var pendingOff []int         // ops whose target's exit is still to come
	signalled := map[int]int64{} // op index → when the kill its power-off made took effect
	var offWhileRunning []int    // power-offs of a target that was running
	for _, e := range a.ev {
		switch e.Kind {
		case history.KindProcessStart:
			running[e.Node] = true
		case history.KindProcessExit:
			running[e.Node] = false
			lastExit[e.Node] = e.T
			rest := pendingOff[:0]
			for _, i := range pendingOff {
				if s.Ops[i].Target == e.Node && s.Ops[i].DeathT == 0 {
					s.Ops[i].DeathT = e.T
				} else {
					rest = append(rest, i)
				}
			}
			pendingOff = rest
		case history.KindSignal:
			// The kill a power-off made, recorded once it took effect: the target's death
			// even when the engine reports the exit later.
			var id int
			if _, err := fmt.Sscanf(e.Reason, "fence %d:", &id); err == nil {
				if i, ok := byID[id]; ok && (s.Ops[i].DeathT == 0 || e.T < s.Ops[i].DeathT) {
					s.Ops[i].DeathT = e.T
					signalled[i] = e.T
				}
			}
		case history.KindFenceRequest:
			op := FenceOp{ID: e.FenceID, By: e.Node, Target: e.Target, Action: e.Action, T: e.T}
			byID[e.FenceID] = len(s.Ops)
			s.Ops = append(s.Ops, op)
			if op.Action == history.FenceOff {
				if running[op.Target] {
					pendingOff = append(pendingOff, len(s.Ops)-1)
					offWhileRunning = append(offWhileRunning, len(s.Ops)-1)
				} else {
					s.Ops[len(s.Ops)-1].DeathT = lastExit[op.Target]
				}
			}
		case history.KindFenceReply:
			i, ok := byID[e.FenceID]
			if !ok {
				continue
			}
			op := &s.Ops[i]
			op.ReplyT, op.Result, op.Power, op.Reason = e.T, e.Result, e.Power, e.Reason
		}
	}
	for _, i := range offWhileRunning {
		// Only a death the request caused: its own kill, or an exit after a power-off the
		// device carried out. A request dropped, refused or failed (or acknowledged by a
		// lying device whose late power-off never came) did not end the process, whatever
		// ended it later (a fault, the teardown).
		if op := &s.Ops[i]; op.Result != history.FenceDone {
			op.DeathT = signalled[i]
		}
	}
	for i := range s.Ops {
		op := &s.Ops[i]
		if op.Action != history.FenceOff {
			continue
		}
		switch {
		case op.Power == "off" && (op.DeathT == 0 || op.DeathT > op.ReplyT):
			op.AliveAtAnswer = true
			s.OffsAcknowledgedAlive++
			msg := fmt.Sprintf("fence %d: the device answered %s off for %s at %s, but %s's process ", op.ID, op.Target, who(op.By), fmtT(op.ReplyT, a.startT), op.Target)
			if op.DeathT == 0 {
				msg += "was not ended by it"
			} else {
				msg += fmt.Sprintf("ran %s longer (ended at %s)", time.Duration(op.DeathT-op.ReplyT), fmtT(op.DeathT, a.startT))
			}
			rl.add(Reason{Checker: "fences", Code: "fence-acknowledged-alive", Severity: SevFinding, Message: msg,
				T: op.ReplyT, EndT: op.DeathT, Nodes: nodesOf(op.By, op.Target)})
		case op.Power == "off":
			s.OffsConfirmed++
		default:
			s.OffsUnconfirmed++
			res := op.Result
			if res == "" {
				res = "no answer before the run ended"
			}
			rl.add(Reason{Checker: "fences", Code: "fence-not-confirmed", Severity: SevFinding,
				Message: fmt.Sprintf("fence %d: %s asked to power %s off at %s: %s %s", op.ID, who(op.By), op.Target, fmtT(op.T, a.startT), res, op.Reason),
				T:       op.T, EndT: op.ReplyT, Nodes: nodesOf(op.By, op.Target)})
		}
	}
	s.mutual(a, rl)
	s.OpsTotal = len(s.Ops)
	if len(s.Ops) > maxFenceOps {
		s.OpsOmitted = len(s.Ops) - maxFenceOps
		s.Ops = append(s.Ops[:maxFenceOps/2], s.Ops[len(s.Ops)-maxFenceOps/2:]...)
	}
}

// mutual reports pairs of candidates that asked to power each other off while both ran:
// the two sides of a split each shooting the other (a fence race).
func (s *FenceResult) mutual(a *analysis, rl *reasonList) {
	type pair struct{ a, b string }
	first := map[pair]*FenceOp{}
	seen := map[pair]bool{}
	for i := range s.Ops {
		op := &s.Ops[i]
		if op.Action != history.FenceOff || op.By == "" || op.By == op.Target {
			continue
		}
		// A request sent after its sender was powered off by the other one is no race.
		if other, ok := first[pair{op.Target, op.By}]; ok && (other.DeathT == 0 || other.DeathT >= op.T || other.Target != op.By) {
			if p := (pair{min(op.By, op.Target), max(op.By, op.Target)}); !seen[p] {
				seen[p] = true
				dead := []string{}
				for _, x := range []*FenceOp{other, op} {
					if x.DeathT > 0 {
						dead = append(dead, x.Target)
					}
				}
				rl.add(Reason{Checker: "fences", Code: "fenced-each-other", Severity: SevFinding,
					Message: fmt.Sprintf("%s and %s asked to power each other off (fence %d at %s, fence %d at %s); powered off: %v",
						other.By, op.By, other.ID, fmtT(other.T, a.startT), op.ID, fmtT(op.T, a.startT), dead),
					T: other.T, EndT: op.T, Nodes: []string{other.By, op.By}})
			}
		}
		if _, ok := first[pair{op.By, op.Target}]; !ok {
			first[pair{op.By, op.Target}] = op
		}
	}
	sort.SliceStable(s.Ops, func(i, j int) bool { return s.Ops[i].T < s.Ops[j].T })
}

func who(by string) string {
	if by == "" {
		return "a sender outside the run's candidates"
	}
	return by
}

func nodesOf(by, target string) []string {
	if by == "" {
		return []string{target}
	}
	return []string{by, target}
}
