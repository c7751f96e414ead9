package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Trigger events: a fault with on=EVENT starts when the event is recorded (plus after=)
// instead of at a planned offset.
const (
	EventElected     = "elected"
	EventCampaigning = "campaigning"
	EventWrite       = "write"
	EventSteppedDown = "stepped-down"
	EventFaultEnd    = "fault-end"
	EventFaultStart  = "fault-start"
	EventStep        = "step"
)

// TriggerBound is the stated bound from a triggering event's t to its fault's start t (minus
// after=): the candidate's output reaching the harness through the container engine's log
// stream, plus the fault's own apply. Measured in docs/performance.md ("Triggered faults");
// harness/trigger_chaos_test.go holds real runs to it.
const TriggerBound = 500 * time.Millisecond

// TargetTrigger is the node whose event fired a triggered fault (fault-end: the healed
// fault's targets). With a candidate event, target=leader means the same node.
const TargetTrigger = "trigger"

// triggerForm is shown with every trigger error so the user sees the valid form.
const triggerForm = `valid form: on=EVENT[,after=DURATION] with EVENT one of elected, campaigning, write (the first write of a tenure), write:N (its N-th write, counted from its election or the last heal), stepped-down, fault-start, fault-end, step:NAME (a step the recipe emits); after >= 0 (e.g. pause:target=leader,on=write:3,for=3xTTL,count=1)`

var triggerDocs = []struct{ name, doc string }{
	{EventElected, "a candidate announced elected (target=leader or trigger: that candidate)"},
	{EventCampaigning, "a candidate started a campaign"},
	{EventWrite + "[:N]", "the N-th write (default 1) of a tenure, counted from its election or from the last fault's heal, whichever is later, as the candidate reported it (its answer came): a leader that is back at work after a heal"},
	{EventSteppedDown, "a candidate stopped believing it leads"},
	{EventStep + ":NAME", "the recipe emitted step NAME (optional contract event, e.g. lock-acquired between two store commands); refused when the recipe declares no such step"},
	{EventFaultStart, "another fault took effect (target=trigger: its targets): chains a fault on the one before it"},
	{EventFaultEnd, "another fault that took effect was healed (target=trigger: its targets)"},
}

// TriggerInfo is one trigger event and what it means.
type TriggerInfo struct{ Name, Doc string }

// TriggerEvents describes the events faults can be triggered on.
func TriggerEvents() []TriggerInfo {
	out := make([]TriggerInfo, len(triggerDocs))
	for i, t := range triggerDocs {
		out[i] = TriggerInfo{t.name, t.doc}
	}
	return out
}

// Trigger is the event a fault starts on (FaultSpec.On).
type Trigger struct {
	Event string // one of the Event* names; "" = not triggered
	N     int    // write: the N-th write of a tenure (>= 1)
	Step  string // step: the step's name
}

// IsSet reports whether the fault is triggered by an event.
func (t Trigger) IsSet() bool { return t.Event != "" }

// candidate reports whether the event comes from a candidate (it then has a node).
func (t Trigger) candidate() bool { return t.IsSet() && !t.nemesis() }

// nemesis reports whether the event is the nemesis's own (a fault starting or ending).
func (t Trigger) nemesis() bool { return t.Event == EventFaultEnd || t.Event == EventFaultStart }

func (t Trigger) String() string {
	switch t.Event {
	case EventWrite:
		if t.N > 1 {
			return EventWrite + ":" + strconv.Itoa(t.N)
		}
	case EventStep:
		return EventStep + ":" + t.Step
	}
	return t.Event
}

// ParseTrigger reads the value of on=.
func ParseTrigger(s string) (Trigger, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	switch name {
	case EventElected, EventCampaigning, EventSteppedDown, EventFaultEnd, EventFaultStart:
		if hasArg {
			return Trigger{}, fmt.Errorf("on=%s: event %s takes no argument; %s", s, name, triggerForm)
		}
		return Trigger{Event: name}, nil
	case EventWrite:
		t := Trigger{Event: EventWrite, N: 1}
		if hasArg {
			n, err := strconv.Atoi(arg)
			if err != nil || n < 1 {
				return Trigger{}, fmt.Errorf("on=%s: the write number must be a whole number >= 1 (write:3 = the third write of a tenure); %s", s, triggerForm)
			}
			t.N = n
		}
		return t, nil
	case EventStep:
		if arg == "" {
			return Trigger{}, fmt.Errorf("on=%s: name the step, e.g. on=step:lock-acquired (a recipe's steps: splitbrain candidate --list); %s", s, triggerForm)
		}
		if !validStepName(arg) {
			return Trigger{}, fmt.Errorf("on=%s: step names use letters, digits, '-', '_' and '.'; %s", s, triggerForm)
		}
		return Trigger{Event: EventStep, Step: arg}, nil
	}
	return Trigger{}, fmt.Errorf("on=%s: unknown event %q; %s", s, name, triggerForm)
}

// validStepName mirrors contract.ValidStepName (the nemesis does not import the contract).
func validStepName(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c == '-' || c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return s != ""
}

// CheckSteps refuses triggers that can never fire for a recipe: a step the recipe does not
// emit. recipe names it in the message; steps are the ones it declares.
func (s Schedule) CheckSteps(recipe string, steps []string) error {
	for _, f := range s.Faults {
		if f.On.Event != EventStep || slices.Contains(steps, f.On.Step) {
			continue
		}
		have := "it declares no steps, so no step trigger can fire"
		if len(steps) > 0 {
			have = "its steps are " + strings.Join(steps, ", ") + " (on=step:" + steps[0] + ")"
		}
		return fmt.Errorf("%q: recipe %s never emits step %q, so this trigger can never fire: %s; %s", f.String(), recipe, f.On.Step, have, triggerForm)
	}
	return nil
}

// checkTriggers refuses schedule-level trigger problems: a fault-end trigger with no other
// fault to wait for.
func (s Schedule) checkTriggers() error {
	for _, f := range s.Faults {
		if f.On.nemesis() && len(s.Faults) < 2 {
			return fmt.Errorf("%q: on=%s fires on another fault, and this schedule has no other fault: add one (e.g. 'partition:shape=leader-from-store,for=3xTTL; %s'); %s", f.String(), f.On.Event, f.String(), triggerForm)
		}
	}
	return nil
}

// PlannedTrigger is a triggered fault of the plan: its template occurrence and when it fires.
type PlannedTrigger struct {
	On    string   `json:"on"`              // the trigger as written (canonical)
	After Duration `json:"after"`           // from the event to the fault's start
	Every Duration `json:"every"`           // cooldown: least time between two triggering events that fire
	Count int      `json:"count,omitempty"` // at most this many occurrences (0 = no limit)
	// Fault is the occurrence it starts (ID and At are set when it fires); seeded choices
	// (random-candidate, the halves of a partition) are drawn once, at plan time.
	Fault PlannedFault `json:"fault"`
	// Seed draws the per-occurrence Pick (which follower, which stale leader).
	Seed uint64 `json:"seed"`

	trig Trigger
}

// FiredTrigger is what fired one occurrence of a triggered fault; it goes into fault-start.
type FiredTrigger struct {
	On    string   `json:"on"`
	Nodes []string `json:"nodes,omitempty"`
	Seq   int64    `json:"seq,omitempty"`
	T     int64    `json:"t"`
}

// planTrigger makes a triggered fault concrete: one template occurrence, the cooldown and
// a seed for per-occurrence picks.
func planTrigger(f FaultSpec, phase time.Duration, topo Topology, rng *rand.Rand) (PlannedTrigger, error) {
	tf := f
	tf.Every, tf.Jitter, tf.Count = Dur{}, Dur{}, 0
	tf.At = Dur{Set: true, Text: "0s"}
	occ, err := planFault(tf, phase, topo, rng)
	if err != nil {
		return PlannedTrigger{}, err
	}
	tmpl := occ[0]
	tmpl.Spec = f.String()
	after := f.After.Resolve(topo.TTL)
	length := time.Duration(tmpl.For)
	if after < 0 || after > phase {
		return PlannedTrigger{}, fmt.Errorf("after=%s resolves to %s: it must be between 0 and the fault phase (%s)", f.After, after, phase)
	}
	if after+length > phase {
		return PlannedTrigger{}, fmt.Errorf("after=%s plus for=%s (%s) is longer than the fault phase (%s): no occurrence could end inside it", f.After, time.Duration(tmpl.For), after+length, phase)
	}
	// By default the next occurrence may fire as soon as the previous one ended (busy holds
	// it back until then): with write:N counted from the last heal, cycles are paced by the
	// recipe's own recovery, not by a clock.
	every := after + length
	if f.Every.Set {
		every = f.Every.Resolve(topo.TTL)
		if every <= after+length {
			return PlannedTrigger{}, fmt.Errorf("every=%s (%s) is the cooldown between triggered occurrences and must be longer than after+for (%s) so they do not overlap", f.Every, every, after+length)
		}
	}
	// count= is the number of occurrences the run must see take effect (the validity checker
	// holds it to that), so it must fit: n occurrences take after+for plus n-1 cooldowns.
	if f.Count > 1 {
		if fit := int64((phase-(after+length))/every) + 1; int64(f.Count) > fit {
			return PlannedTrigger{}, fmt.Errorf("count=%d occurrences cannot fit in the %s fault phase: with after+for=%s and a cooldown every=%s at most %d fit; lower count= or every=, or lengthen the run", f.Count, phase, after+length, every, fit)
		}
	}
	return PlannedTrigger{On: f.On.String(), After: Duration(after), Every: Duration(every), Count: f.Count,
		Fault: tmpl, Seed: rng.Uint64(), trig: f.On}, nil
}

// WithOn is p firing on another event (on as written in a spec), e.g. a chained link
// re-anchored on the event of the link it followed when that one is dropped (shrink).
func (p PlannedTrigger) WithOn(on string) (PlannedTrigger, error) {
	t, err := ParseTrigger(on)
	if err != nil {
		return p, err
	}
	p.On, p.trig = on, t
	return p, nil
}

// trigger returns the parsed trigger (plans read back from JSON carry only On).
func (p *PlannedTrigger) trigger() Trigger {
	if !p.trig.IsSet() {
		p.trig, _ = ParseTrigger(p.On)
	}
	return p.trig
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// splitmix is SplitMix64's finaliser: a well-spread pick from a seed and a counter.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// checkTrigger refuses key combinations that make no sense with (or without) on=.
func (f *FaultSpec) checkTrigger() error {
	if !f.On.IsSet() {
		if f.After.Set {
			return fmt.Errorf("after= delays a triggered fault from its event and needs on=EVENT; for a time-tabled fault use at=; %s", triggerForm)
		}
		if f.Target == TargetTrigger {
			return fmt.Errorf("target=trigger names the node whose event fired the fault and needs on=EVENT; %s", triggerForm)
		}
		return nil
	}
	if f.At.Set {
		return fmt.Errorf("at= places a time-tabled fault; a fault with on=%s starts on its event (delay it with after=); %s", f.On, triggerForm)
	}
	if f.Jitter.Set {
		return fmt.Errorf("jitter= shifts time-tabled repeats; a fault with on=%s starts on its event (every= is its cooldown); %s", f.On, triggerForm)
	}
	return nil
}
