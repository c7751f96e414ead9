package checkers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// nodeExitGrace: most fault-starts are stamped once the fault is in effect (a kill's at its
// first send), so a node killed by one can have died shortly before that stamp.
const nodeExitGrace = int64(1e9)

// ValidityResult is the validity checker's section: did the run test anything at all?
type ValidityResult struct {
	RunEndReason     string `json:"run_end_reason,omitempty"` // why the run stopped early
	FaultsPlanned    int    `json:"faults_started"`           // fault-start events
	FaultsApplied    int    `json:"faults_applied"`           // fault-start events without an error
	Decisions        int    `json:"decisions"`                // writes the resource decided
	AcceptedBefore   int    `json:"accepted_before_first_fault"`
	AcceptedAfter    int    `json:"accepted_after_final_heal"`
	FirstFaultT      int64  `json:"first_fault_t,omitempty"`
	FinalHealT       int64  `json:"final_heal_t,omitempty"`
	NodesLost        int    `json:"nodes_lost"`
	HarnessErrors    int    `json:"harness_errors"`
	TeardownProblems int    `json:"teardown_problems"`
}

// reset and check make ValidityResult the section of its checker (Results).
func (s *ValidityResult) reset() { *s = ValidityResult{} }
func (s *ValidityResult) check(_ context.Context, a *analysis, rl *reasonList) {
	*s = checkValidity(a, rl)
}

// checkValidity holds the guards that make a run that proved nothing unknown: it never
// turns an invalid verdict into anything else (an invalid reason always wins, verdictOf).
func checkValidity(a *analysis, rl *reasonList) ValidityResult {
	res := ValidityResult{RunEndReason: a.runEndReason, Decisions: len(a.decisions)}
	unknown := func(code string, t, endT int64, nodes []string, msg string) {
		rl.add(Reason{Checker: "validity", Code: code, Severity: SevUnknown, T: t, EndT: endT, Nodes: nodes, Message: msg})
	}
	if len(a.ev) == 0 {
		unknown("empty-history", 0, 0, nil, "the history is empty")
		return res
	}
	switch {
	case !a.hasRunEnd:
		unknown("no-run-end", a.endT, 0, nil, "the history has no run-end event: the run was cut off, so only what was recorded was checked")
	case a.runEndReason != "":
		unknown("run-incomplete", a.endT, 0, nil, "the run did not complete: "+a.runEndReason)
	}
	guardHeals(a, unknown)
	guardGoal(a, a.p.Goal, unknown)
	guardHarness(a, &res, unknown, rl)
	guardFaults(a, &res, unknown, rl)
	guardActivity(a, &res, unknown)
	guardNodeExits(a, &res, unknown)
	return res
}

type unknownFn func(code string, t, endT int64, nodes []string, msg string)

// guardHeals: a fault whose undo failed (also one that applied only partly) or that never
// healed leaves recovery unproven: what followed ran on a damaged system.
func guardHeals(a *analysis, unknown unknownFn) {
	for _, f := range a.faults {
		switch {
		case f.HealErr != "":
			what := "could not be healed"
			if f.Error != "" {
				what = "applied only partly (" + f.Error + ") and could not be undone"
			}
			unknown("heal-failed", f.EndT, 0, f.Targets, fmt.Sprintf("fault %d (%s on %v) %s: %s", f.ID, f.Kind, f.Targets, what, f.HealErr))
		case f.Open && a.hasRunEnd:
			unknown("heal-failed", f.StartT, 0, f.Targets, fmt.Sprintf("fault %d (%s on %v) has no fault-end: it was never healed", f.ID, f.Kind, f.Targets))
		}
	}
}

// guardHarness: the harness's own failures, recorded as they happened. A heal failure is
// heal-failed; a teardown problem (leftover Docker objects) comes after observation and is a
// finding; anything else is harness-error.
func guardHarness(a *analysis, res *ValidityResult, unknown unknownFn, rl *reasonList) {
	for _, i := range a.harnessErrors {
		e := &a.ev[i]
		switch e.Phase {
		case history.PhaseTeardown:
			res.TeardownProblems++
			rl.add(Reason{Checker: "validity", Code: "teardown-problem", Severity: SevFinding, T: e.T, Seqs: []int64{e.Seq},
				Message: "teardown: " + e.Reason})
		case history.PhaseHeal:
			res.HarnessErrors++
			unknown("heal-failed", e.T, 0, nil, "a fault could not be healed, so recovery is not evidence: "+e.Reason)
		default:
			res.HarnessErrors++
			unknown("harness-error", e.T, 0, nil, fmt.Sprintf("the harness failed during %s: %s", nonEmptyPhase(e.Phase), e.Reason))
		}
	}
}

func nonEmptyPhase(p string) string {
	if p == "" {
		return "the run"
	}
	return "the " + p + " phase"
}

// guardFaults: a fault phase in which no fault took effect tested nothing; one failed fault
// among applied ones is only worth knowing. With the schedule's entries on record
// (fault-planned), each entry must also have taken effect as often as planned (guardPlanned).
func guardFaults(a *analysis, res *ValidityResult, unknown unknownFn, rl *reasonList) {
	res.FaultsPlanned = len(a.faults)
	for _, f := range a.faults {
		if f.Error == "" {
			res.FaultsApplied++
		}
	}
	for _, f := range a.faults {
		if f.Error != "" && res.FaultsApplied > 0 {
			rl.add(Reason{Checker: "validity", Code: "fault-not-applied", Severity: SevFinding, T: f.StartT, Nodes: f.Targets, Seqs: []int64{f.StartSeq},
				Message: fmt.Sprintf("fault %d (%s on %v) did not take effect: %s", f.ID, f.Kind, f.Targets, f.Error)})
		}
	}
	if len(a.planned) > 0 {
		guardPlanned(a, res, unknown)
		return
	}
	if res.FaultsPlanned > 0 && res.FaultsApplied == 0 {
		unknown("nothing-faulted", a.faults[0].StartT, 0, nil,
			fmt.Sprintf("none of the %d faults took effect (first: %s): the run tested the recipe without faults", res.FaultsPlanned, a.faults[0].Error))
	}
}

// plannedKey groups a schedule entry with its occurrences: the spec they share and, for a
// triggered entry, its trigger (a plan given without specs falls back to the kind).
func plannedKey(spec, kind, trigger string) string {
	if spec == "" {
		spec = kind
	}
	return trigger + "\x00" + spec
}

// guardPlanned holds the run to its schedule: a time-tabled entry must have taken effect at
// least once, a triggered entry as often as its count= (once without count=). An entry that
// fell short is unknown fault-missing, naming it: a trigger whose event never came (or came
// too late for the fault to fit the phase) leaves no fault-start at all, so without this a
// run whose only fault never fired would pass as a faulted run. No fault in effect at all
// is nothing-faulted. Only a run that completed its fault phase is held to it; an
// interrupted one is unknown anyway.
func guardPlanned(a *analysis, res *ValidityResult, unknown unknownFn) {
	if !a.hasRunEnd || a.runEndReason != "" {
		return
	}
	type tally struct{ fired, applied int }
	got := map[string]*tally{}
	firstErr := map[string]string{}
	for _, f := range a.faults {
		k := plannedKey(f.Spec, f.Kind, f.Trigger)
		if got[k] == nil {
			got[k] = &tally{}
		}
		got[k].fired++
		if f.Error == "" {
			got[k].applied++
		} else if firstErr[k] == "" {
			firstErr[k] = f.Error
		}
	}
	want := map[string]int{}
	var order []int
	for _, i := range a.planned {
		e := &a.ev[i]
		k := plannedKey(e.Spec, e.Fault, e.Trigger)
		if _, ok := want[k]; !ok {
			order = append(order, i)
		}
		want[k] += max(e.Count, 1)
	}
	var short []string
	for _, i := range order {
		e := &a.ev[i]
		k := plannedKey(e.Spec, e.Fault, e.Trigger)
		t := got[k]
		if t == nil {
			t = &tally{}
		}
		if t.applied >= want[k] {
			continue
		}
		what := fmt.Sprintf("fault %q took effect %d of the %d times planned", e.Spec, t.applied, want[k])
		switch {
		case e.Trigger != "" && t.fired == 0:
			what += fmt.Sprintf(": its trigger on=%s never fired (the event did not come in the fault phase, or came too late for after+for to fit before it ended)", e.Trigger)
		case e.Trigger != "" && t.fired < want[k]:
			what += fmt.Sprintf(": its trigger on=%s fired %d times", e.Trigger, t.fired)
		}
		if firstErr[k] != "" {
			what += "; first error: " + firstErr[k]
		}
		short = append(short, what)
	}
	if len(short) == 0 {
		return
	}
	t0 := a.startT
	if len(a.planned) > 0 {
		t0 = a.ev[a.planned[0]].T
	}
	if res.FaultsApplied == 0 {
		unknown("nothing-faulted", t0, 0, nil, "no fault took effect, so the run tested the recipe without faults: "+strings.Join(short, "; "))
		return
	}
	for _, s := range short {
		unknown("fault-missing", t0, 0, nil, s+": the run did not test its whole schedule")
	}
}

// guardActivity: nothing decided by the resource means fencing was never exercised; with
// faults, accepted writes must exist before the first and after the final heal (etcd
// robustness's minimal-traffic guard), or the faults hit an idle system.
func guardActivity(a *analysis, res *ValidityResult, unknown unknownFn) {
	if len(a.decisions) == 0 {
		unknown("nothing-tested", a.startT, a.endT, nil, "the resource decided no write: fencing was never exercised, so safety cannot be judged")
		return
	}
	var first, last int64 = -1, -1
	for _, f := range a.faults {
		if f.Error != "" {
			continue
		}
		if first < 0 || f.StartT < first {
			first = f.StartT
		}
		last = max(last, f.EndT)
	}
	if first < 0 {
		return
	}
	res.FirstFaultT, res.FinalHealT = first, last
	obsEnd := a.endT
	if a.teardownT > 0 {
		obsEnd = a.teardownT
	}
	for _, i := range a.decisions {
		e := &a.ev[i]
		if e.Result != history.ResultAccepted {
			continue
		}
		if e.T < first {
			res.AcceptedBefore++
		}
		if e.T > last && e.T <= obsEnd {
			res.AcceptedAfter++
		}
	}
	if res.AcceptedBefore == 0 {
		unknown("too-little-activity", a.startT, first, nil, fmt.Sprintf("no write was accepted before the first fault at %s: the faults hit a system that had not worked yet", fmtT(first, a.startT)))
	}
	if res.AcceptedAfter == 0 && last < obsEnd {
		unknown("too-little-activity", last, obsEnd, nil, fmt.Sprintf("no write was accepted after the final heal at %s: recovery was never shown", fmtT(last, a.startT)))
	}
}

// guardNodeExits: a store node or the resource that exits before teardown without a fault
// targeting it changed the system under test behind the schedule's back.
func guardNodeExits(a *analysis, res *ValidityResult, unknown unknownFn) {
	for _, i := range a.nodeExits {
		e := &a.ev[i]
		if a.teardownT > 0 && e.T >= a.teardownT {
			continue
		}
		explained := false
		for _, f := range a.faults {
			if slices.Contains(f.Targets, e.Node) && f.StartT-nodeExitGrace <= e.T && e.T <= f.EndT {
				explained = true
				break
			}
		}
		if explained {
			continue
		}
		res.NodesLost++
		why := ""
		if e.Reason != "" {
			why = " (" + e.Reason + ")"
		}
		unknown("node-lost", e.T, 0, []string{e.Node}, fmt.Sprintf("%s exited at %s%s with no fault targeting it: the system under test changed outside the fault plan",
			e.Node, fmtT(e.T, a.startT), why))
	}
}
