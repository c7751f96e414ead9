package checkers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// Cause classes of an invalid run: what, besides the candidate, the violation rested on.
// A user who runs a durable store, or has accepted a pattern's risk, can set a class aside
// (explore --accept) and go on looking for bugs in the candidate's own logic.
const (
	// CauseStoreAmnesia: a store that keeps its data only in memory was crashed and came
	// back before the violation, having forgotten every lock, lease and counter.
	CauseStoreAmnesia = "store-amnesia"
	// CauseEviction: a Pod was deleted while its process ran on (the leader-for-life
	// pattern's weakness, shared by every variant that trusts the Pod's lifetime).
	CauseEviction = "eviction"
	// CauseClockStep: a clock was stepped (bump or strobe) before the violation; a rate
	// difference is not a step and stays with the candidate.
	CauseClockStep = "clock-step"
	// CauseFenceLie: the fence device answered "off" while the node ran on.
	CauseFenceLie = "fence-lie"
	// CauseOwnLogic: none of the above came before the violation: the faults were on
	// candidates and the network, and the candidate's own protocol let it happen.
	CauseOwnLogic = "own-logic"
)

// CauseClasses lists the classes, most specific first (the order AttributeCause picks in).
var CauseClasses = []string{CauseStoreAmnesia, CauseEviction, CauseClockStep, CauseFenceLie, CauseOwnLogic}

// CauseFaultKinds are, per class, the fault kinds it rests on: the faults a shrink drops
// first, since a find that still fails without them is the candidate's own (own-logic rests
// on none in particular).
var CauseFaultKinds = map[string][]string{
	CauseStoreAmnesia: {"kill"},
	CauseEviction:     {"evict"},
	CauseClockStep:    {"clock"},
	CauseFenceLie:     {"fence-lying"},
}

// CauseText says what each class means, for --accept's help and the report.
var CauseText = map[string]string{
	CauseStoreAmnesia: "an in-memory store crashed and came back empty before the violation",
	CauseEviction:     "a Pod was evicted while its process ran on (a weakness of the leader-for-life pattern)",
	CauseClockStep:    "a clock was stepped before the violation",
	CauseFenceLie:     "the fence device reported a node off that was still running",
	CauseOwnLogic:     "the candidate's own protocol, under faults on candidates and the network",
}

// Cause is an invalid run's class and the faults it rests on.
type Cause struct {
	Class string `json:"class"`
	// Also lists the further classes whose faults came before the violation too.
	Also []string `json:"also,omitempty"`
	// Evidence says which fault, and when, relative to the first violation.
	Evidence string `json:"evidence"`
	// FirstT is the first invalid reason's time (CLOCK_MONOTONIC ns; 0: none had a time,
	// and every fault counts).
	FirstT int64 `json:"first_t,omitempty"`
	// Key tells distinct finds apart: the class and the invalid reason codes.
	Key string `json:"key"`
}

func (c Cause) String() string {
	s := c.Class + ": " + c.Evidence
	if len(c.Also) > 0 {
		s += " (also before it: " + strings.Join(c.Also, ", ") + ")"
	}
	return s
}

// AttributeCause classifies a checked invalid run from its results alone: its store, its
// fault windows and the time of its first invalid reason. Only faults that started before
// that time count; a store crash counts once it healed (the server came back) before it.
func AttributeCause(res *Results) Cause {
	first := int64(0)
	var codes []string
	for _, r := range res.Reasons {
		if r.Severity != SevInvalid {
			continue
		}
		if !slices.Contains(codes, r.Code) {
			codes = append(codes, r.Code)
		}
		at := r.T
		if r.Checker == "porcupine" && r.EndT > 0 {
			at = r.EndT // its window opens at the first operation; the illegal one ends it
		}
		if at > 0 && (first == 0 || at < first) {
			first = at
		}
	}
	slices.Sort(codes)
	before := func(t int64) bool { return first == 0 || (t > 0 && t <= first) }
	candidate := map[string]bool{}
	for _, n := range res.Run.Candidates {
		candidate[n] = true
	}
	for _, n := range res.Params.Nodes {
		candidate[n] = true
	}
	volatile := false
	if st, ok := storekinds.Lookup(res.Params.Store); ok {
		volatile = st.Volatile
	}
	rel := func(t int64) string {
		if res.Run.StartT > 0 && t >= res.Run.StartT {
			return "+" + time.Duration(t-res.Run.StartT).Round(time.Millisecond).String()
		}
		return "t=" + fmt.Sprint(t)
	}
	evidence := map[string]string{}
	note := func(class, text string) {
		if _, ok := evidence[class]; !ok {
			evidence[class] = text
		}
	}
	for _, f := range res.Faults {
		if f.Error != "" || !before(f.StartT) {
			continue // a fault that did not apply, or came after the violation, caused nothing
		}
		switch {
		case f.Kind == "kill" && volatile:
			var stores []string
			for _, t := range f.Targets {
				if !candidate[t] {
					stores = append(stores, t)
				}
			}
			if len(stores) > 0 && !f.Open && f.EndT > 0 && before(f.EndT) {
				note(CauseStoreAmnesia, fmt.Sprintf("%s crashed at %s and restarted empty at %s (the %s store keeps its data only in memory)",
					strings.Join(stores, ","), rel(f.StartT), rel(f.EndT), res.Params.Store))
			}
		case f.Kind == "evict":
			note(CauseEviction, fmt.Sprintf("%s was evicted at %s", strings.Join(f.Targets, ","), rel(f.StartT)))
		case f.Kind == "clock" && !strings.Contains(f.Spec, "op=rate"):
			note(CauseClockStep, fmt.Sprintf("%s had its clock stepped at %s (%s)", strings.Join(f.Targets, ","), rel(f.StartT), f.Spec))
		case f.Kind == "fence-lying":
			note(CauseFenceLie, fmt.Sprintf("the fence device lied from %s", rel(f.StartT)))
		}
	}
	c := Cause{Class: CauseOwnLogic, FirstT: first}
	for _, class := range CauseClasses {
		if _, ok := evidence[class]; !ok {
			continue
		}
		if c.Class == CauseOwnLogic {
			c.Class, c.Evidence = class, evidence[class]
		} else {
			c.Also = append(c.Also, class)
		}
	}
	if first > 0 {
		at := "the first violation at " + rel(first)
		if c.Evidence == "" {
			c.Evidence = "no store crash, eviction, clock step or lying fence came before " + at
			if !slices.ContainsFunc(res.Faults, func(f FaultWindow) bool { return f.Error == "" && before(f.StartT) }) {
				// Nothing the nemesis did can have caused it: a starved host pauses candidates
				// too (a kazoo session expired unprompted at load 78, 2026-11-29).
				c.Evidence += ", nor had any fault started: the system broke with no fault in effect (a host too loaded to schedule a candidate in time acts as a pause)"
			}
		} else {
			c.Evidence += "; " + at
		}
	} else if c.Evidence == "" {
		c.Evidence = "no store crash, eviction, clock step or lying fence in the run"
	}
	c.Key = c.Class + "|" + strings.Join(codes, ",")
	return c
}
