package reports

import (
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/checkers"
)

// TestExplainNamesTheFenceStep: a stale write after an unconfirmed fence is explained with
// the fence request, its outcome and the successor acting without the confirmation.
func TestExplainNamesTheFenceStep(t *testing.T) {
	r := &checkers.Results{
		Run: checkers.RunInfo{StartT: 1, EndT: 10_000_000_000},
		Reasons: []checkers.Reason{{Checker: "resource", Code: "stale-write-accepted", Severity: checkers.SevInvalid,
			T: 5_000_000_000, Nodes: []string{"c3"}, Tokens: []int64{5, 7}}},
		Tenures: checkers.TenureResult{Tenures: []checkers.Tenure{
			{Node: "c3", Token: 5, StartT: 100_000_000, EndT: 6_000_000_000},
			{Node: "c2", Token: 7, StartT: 4_000_000_000, EndT: 9_000_000_000},
		}},
		Fences: checkers.FenceResult{Ops: []checkers.FenceOp{
			{ID: 1, By: "c2", Target: "c3", Action: "off", T: 2_000_000_000, ReplyT: 2_000_000_100, Result: "dropped", Reason: "fence-unreachable (fault 2)"},
			{ID: 2, By: "c1", Target: "c1", Action: "status", T: 9_500_000_000, ReplyT: 9_500_000_100, Result: "done", Power: "on"},
		}},
	}
	ex := Explain(r)
	if len(ex) != 1 {
		t.Fatalf("want one explanation, have %d", len(ex))
	}
	text := ex[0].Text
	for _, want := range []string{"c2 asked the fence device to power c3 off (fence 1)", "fence 1 was dropped (fence-unreachable (fault 2))",
		"c2 led (token 7) although c3 was not confirmed dead by fence 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "fence 2") {
		t.Errorf("a fence request after the reason, by a node outside the story, was told:\n%s", text)
	}
}

// TestExplainKeepsThePowerOffAmongStatusReads: fence_docker reads a node's power state before
// and after each action, so a STONITH story has many reads; the power-off must still be told,
// and a read is worded as one (a list request has no target).
func TestExplainKeepsThePowerOffAmongStatusReads(t *testing.T) {
	ops := []checkers.FenceOp{{ID: 1, By: "c2", Action: "status", T: 1_000_000_000, ReplyT: 1_000_000_100, Result: "done"}}
	for i := range 8 {
		ops = append(ops, checkers.FenceOp{ID: 2 + i, By: "c2", Target: "c3", Action: "status", T: int64(1_500_000_000 + i*100_000_000),
			ReplyT: int64(1_500_000_050 + i*100_000_000), Result: "done", Power: "on"})
	}
	ops = append(ops[:4:4], append([]checkers.FenceOp{{ID: 20, By: "c2", Target: "c3", Action: "off", T: 1_850_000_000, ReplyT: 1_860_000_000, Result: "done", Power: "off"}}, ops[4:]...)...)
	r := &checkers.Results{
		Run: checkers.RunInfo{StartT: 1, EndT: 10_000_000_000},
		Reasons: []checkers.Reason{{Checker: "resource", Code: "stale-write-accepted", Severity: checkers.SevInvalid,
			T: 5_000_000_000, Nodes: []string{"c3"}, Tokens: []int64{5, 7}}},
		Tenures: checkers.TenureResult{Tenures: []checkers.Tenure{
			{Node: "c3", Token: 5, StartT: 100_000_000, EndT: 6_000_000_000},
			{Node: "c2", Token: 7, StartT: 4_000_000_000, EndT: 9_000_000_000},
		}},
		Fences: checkers.FenceResult{Ops: ops},
	}
	text := Explain(r)[0].Text
	if !strings.Contains(text, "c2 asked the fence device to power c3 off (fence 20)") {
		t.Errorf("the power-off among %d status reads was left out:\n%s", len(ops)-1, text)
	}
	if strings.Contains(text, "power c3 status") || strings.Contains(text, "power  ") {
		t.Errorf("a status read is worded as a power action:\n%s", text)
	}
}
