package checkers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// Goal is what an event-ended fault phase waits for (splitbrain run --until, a matrix row's
// until:): the phase ends as soon as every condition holds, and its planned length becomes
// a timeout. A run whose phase timed out first proved less than it set out to and is
// unknown (code goal-not-met). The harness and the checker evaluate the goal with the same
// GoalTracker over the same events in the same order, so they cannot disagree.
type Goal struct {
	// Faults is how many fault occurrences must take effect and heal: the plan's time-tabled
	// occurrences plus every triggered fault's count=. The harness fills it in from the plan,
	// except when the goal counts elections or handoffs: the faults are then the background
	// that makes those, and the phase ends on the count (Faults 0).
	Faults int `json:"faults"`
	// Writes is how many writes the resource must accept after the last disruption (a fault
	// ending or starting, a handoff's SIGTERM) with no fault in effect: a leader is back.
	Writes int `json:"writes"`
	// Elections and Handoffs are counts over the fault phase, for rows whose race is the
	// point (a negative control needs enough leader changes for a miss to be improbable).
	Elections int `json:"elections,omitempty"`
	Handoffs  int `json:"handoffs,omitempty"`
	// Renewed is how many leaders the store must grant anew after the last disruption: an
	// election, with no fault in effect, whose token is above every token elected before
	// that disruption. A leader re-asserting its old grant on reconnect does not count. It
	// is the event a fault on sessions is for when the old grants outlive the heal (servers
	// restored from disk expire the old sessions a timeout later) and no other event shows
	// them gone. Writes then count from the last of these elections.
	Renewed int `json:"renewed,omitempty"`
	// Stall, when set, also ends the phase once the schedule has stopped moving: some
	// faults ran and healed, none is in effect, a leader is back (Writes), and no fault
	// started or ended for Stall. The faults still missing wait on events that did not
	// come (a link on "elected" after faults that caused no election); waiting out the
	// timeout would not bring them. The run is unknown all the same (fault-missing), only
	// sooner. Explore's guided runs use it; a matrix row does not.
	Stall time.Duration `json:"stall_ns,omitempty"`
	// Settle, when set, holds the goal until Settle has passed since the last fault started
	// or ended: what a fault on a lease does shows up to a TTL after its heal (a waiter
	// acquiring on restarted servers, a zombie's last writes), while a leader's writes
	// after the heal come within milliseconds. Explore's guided runs settle for 1xTTL.
	Settle time.Duration `json:"settle_ns,omitempty"`
}

// DefaultGoalWrites is the writes= of a goal that does not name one: a few writes show a
// leader working again, not just elected.
const DefaultGoalWrites = 3

// goalForm is shown with every --until error.
const goalForm = `valid form: a comma-separated list of writes=K (writes accepted after the last fault healed; default 3), elections=E (elections in the fault phase), handoffs=N (handoff SIGTERMs in the fault phase), renewed=N (leaders granted anew after the last heal: elected with a token above every token elected before it; needs a recipe with tokens), settle=D (and D passed since the last fault started or ended), stall=D (also end the phase, unknown, once faults ran and healed, a leader is back and no fault started or ended for D: the rest of the schedule waits on events that did not come), e.g. --until writes=3 or --until elections=20,writes=3; every planned fault (and every triggered fault's count=) must also have run`

// ParseGoal reads an --until value. Faults is left to the harness (it comes from the plan).
func ParseGoal(s string) (Goal, error) {
	g := Goal{Writes: DefaultGoalWrites}
	s = strings.TrimSpace(s)
	if s == "" || s == "faults" {
		return g, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "faults" {
			continue // implicit: every planned fault runs
		}
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			return Goal{}, fmt.Errorf("--until %q: %q is not key=value; %s", s, part, goalForm)
		}
		key = strings.TrimSpace(key)
		if key == "stall" || key == "settle" {
			if seen[key] {
				return Goal{}, fmt.Errorf("--until %q: %s is given twice; %s", s, key, goalForm)
			}
			d, err := time.ParseDuration(strings.TrimSpace(val))
			if err != nil || d <= 0 {
				return Goal{}, fmt.Errorf("--until %q: %s=%s: want a positive duration such as 6s; %s", s, key, val, goalForm)
			}
			seen[key] = true
			if key == "stall" {
				g.Stall = d
			} else {
				g.Settle = d
			}
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < 0 || n > 100000 {
			return Goal{}, fmt.Errorf("--until %q: %s=%s: want a whole number from 0 to 100000; %s", s, key, val, goalForm)
		}
		if seen[key] {
			return Goal{}, fmt.Errorf("--until %q: %s is given twice; %s", s, key, goalForm)
		}
		seen[key] = true
		switch key {
		case "writes":
			g.Writes = n
		case "elections":
			g.Elections = n
		case "handoffs":
			g.Handoffs = n
		case "renewed":
			g.Renewed = n
		default:
			return Goal{}, fmt.Errorf("--until %q: unknown condition %q; %s", s, key, goalForm)
		}
	}
	return g, nil
}

// String is the goal as a reader sees it.
func (g Goal) String() string {
	parts := []string{fmt.Sprintf("%d fault(s) healed", g.Faults), fmt.Sprintf("%d write(s) accepted after the last heal", g.Writes)}
	if g.Elections > 0 {
		parts = append(parts, fmt.Sprintf("%d election(s)", g.Elections))
	}
	if g.Handoffs > 0 {
		parts = append(parts, fmt.Sprintf("%d handoff(s)", g.Handoffs))
	}
	if g.Renewed > 0 {
		parts = append(parts, fmt.Sprintf("%d leader(s) granted anew after the last heal", g.Renewed))
	}
	if g.Settle > 0 {
		parts = append(parts, fmt.Sprintf("%v since the last fault", g.Settle))
	}
	s := strings.Join(parts, ", ")
	if g.Stall > 0 {
		s += fmt.Sprintf("; or stalled %v after the last fault", g.Stall)
	}
	return s
}

// GoalTracker follows a history, event by event in file order, and tells when the goal of
// its fault phase is met. It counts only inside the faults phase.
type GoalTracker struct {
	goal    Goal
	inPhase bool
	met     bool
	stalled bool // ended by Goal.Stall, not met
	// failed names the counted faults that could not be applied (fault-start with an
	// error): each uses up its occurrence, so "every fault took effect and healed" can no
	// longer come and waiting out the timeout proves nothing more.
	failed []string
	moved  int64 // the last fault start or end (Goal.Stall counts from it)

	started   map[int]bool // fault ids that took effect
	active    map[int]bool // of those, not yet healed
	healed    int
	writes    int // accepted since the last disruption, with no fault active
	elections int
	handoffs  int
	// renewed counts elections, since the last disruption and with no fault active, whose
	// token is above floor: the highest token elected before that disruption.
	renewed  int
	topToken int64 // the highest token elected so far
	floor    int64
}

// NewGoalTracker starts tracking g.
func NewGoalTracker(g Goal) *GoalTracker {
	return &GoalTracker{goal: g, started: map[int]bool{}, active: map[int]bool{}}
}

// Observe takes the next event; it returns true for the event that meets the goal.
func (t *GoalTracker) Observe(e history.Event) bool {
	if e.Source == history.SourceHarness && e.Kind == history.KindPhase {
		switch {
		case e.Phase == history.PhaseFaults:
			t.inPhase = true
		case t.inPhase:
			t.inPhase = false
		}
		return t.check(e) // a goal with nothing to wait for is met when the phase begins
	}
	if !t.inPhase || t.met || t.stalled {
		if e.Source == history.SourceCandidate && e.Kind == history.KindElected {
			t.topToken = max(t.topToken, e.Token) // warmup's leaders were granted before any fault
		}
		return false
	}
	switch {
	case e.Source == history.SourceNemesis && e.Kind == history.KindFaultStart:
		t.writes, t.moved = 0, e.T
		t.renewed, t.floor = 0, t.topToken
		if e.Err == "" {
			t.started[e.FaultID] = true
			t.active[e.FaultID] = true
		} else {
			t.failed = append(t.failed, fmt.Sprintf("fault %d (%s) could not be applied: %s", e.FaultID, e.Fault, e.Err))
		}
	case e.Source == history.SourceNemesis && e.Kind == history.KindFaultEnd:
		t.writes, t.moved = 0, e.T
		t.renewed, t.floor = 0, t.topToken
		if t.active[e.FaultID] && e.Err == "" {
			t.healed++
		}
		delete(t.active, e.FaultID)
	case e.Source == history.SourceHarness && e.Kind == history.KindSignal && e.Signal == "SIGTERM" && e.Reason == "handoff":
		t.writes = 0
		t.handoffs++
	case e.Source == history.SourceCandidate && e.Kind == history.KindElected:
		t.elections++
		if len(t.active) == 0 && e.Token > t.floor && t.renewed < t.goal.Renewed {
			t.renewed++
			t.writes = 0 // the writes to wait for are the new leader's era
		}
		t.topToken = max(t.topToken, e.Token)
	case e.Source == history.SourceResource && e.Kind == history.KindDecision && e.Result == history.ResultAccepted:
		if len(t.active) == 0 {
			t.writes++
		}
	}
	return t.check(e)
}

func (t *GoalTracker) check(e history.Event) bool {
	if t.met || t.stalled || !t.inPhase {
		return false
	}
	g := t.goal
	settled := g.Settle == 0 || e.T-t.moved >= int64(g.Settle)
	if t.healed >= g.Faults && len(t.active) == 0 && t.writes >= g.Writes && t.elections >= g.Elections && t.handoffs >= g.Handoffs && t.renewed >= g.Renewed && settled {
		t.met = true
		return true
	}
	if g.Stall > 0 && t.healed > 0 && len(t.active) == 0 && t.writes >= g.Writes && e.T-t.moved >= int64(g.Stall) {
		t.stalled = true
		return true
	}
	if g.Faults > 0 && len(t.failed) > 0 && len(t.active) == 0 {
		t.stalled = true // the goal can no longer be met: end the phase now, unknown
		return true
	}
	return false
}

// Failed lists the counted faults that could not be applied, which ended the phase early.
func (t *GoalTracker) Failed() []string { return t.failed }

// Met reports whether the goal was met inside the faults phase.
func (t *GoalTracker) Met() bool { return t.met }

// Stalled reports whether Goal.Stall ended the phase before the goal was met.
func (t *GoalTracker) Stalled() bool { return t.stalled }

// Missing says what the goal still lacks, for the goal-not-met reason and progress lines.
func (t *GoalTracker) Missing() string {
	g := t.goal
	var out []string
	if t.healed < g.Faults {
		out = append(out, fmt.Sprintf("%d of %d fault(s) took effect and healed", t.healed, g.Faults))
	}
	if len(t.active) > 0 {
		out = append(out, fmt.Sprintf("%d fault(s) still in effect", len(t.active)))
	}
	if t.writes < g.Writes {
		out = append(out, fmt.Sprintf("%d of %d write(s) accepted after the last heal", t.writes, g.Writes))
	}
	if t.elections < g.Elections {
		out = append(out, fmt.Sprintf("%d of %d election(s)", t.elections, g.Elections))
	}
	if t.handoffs < g.Handoffs {
		out = append(out, fmt.Sprintf("%d of %d handoff(s)", t.handoffs, g.Handoffs))
	}
	if t.renewed < g.Renewed {
		out = append(out, fmt.Sprintf("%d of %d leader(s) granted anew after the last heal (elected with a token above %d)", t.renewed, g.Renewed, t.floor))
	}
	return strings.Join(out, "; ")
}

// guardGoal makes a run whose event-ended fault phase timed out before its goal unknown:
// the faults it was meant to test did not all happen, or no leader came back in time.
func guardGoal(a *analysis, g *Goal, unknown unknownFn) {
	if g == nil {
		return
	}
	t := NewGoalTracker(*g)
	sawPhase := false
	for i := range a.ev {
		e := a.ev[i]
		if e.Kind == history.KindPhase && e.Phase == history.PhaseFaults {
			sawPhase = true
		}
		t.Observe(e)
	}
	if t.Met() || !sawPhase {
		return // no faults phase at all: the run ended early, which other guards report
	}
	if t.Stalled() && len(t.Failed()) > 0 {
		unknown("goal-not-met", a.endT, 0, nil, fmt.Sprintf("the fault phase ended before its goal (%s): %s, so the goal could not be met", g, strings.Join(t.Failed(), "; ")))
		return
	}
	if t.Stalled() {
		unknown("goal-not-met", a.endT, 0, nil, fmt.Sprintf("the fault phase stalled before its goal (%s): no fault started or ended for %v; %s", g, g.Stall, t.Missing()))
		return
	}
	unknown("goal-not-met", a.endT, 0, nil, fmt.Sprintf("the fault phase timed out before its goal (%s): %s", g, t.Missing()))
}
