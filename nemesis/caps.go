package nemesis

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Sanity caps of a fault plan: beyond them a run tests the harness, not the recipe. They
// are applied while a plan is built (no occurrence beyond the cap is ever made) and to plans
// given whole (replay, shrink, a config.json read back).
const (
	MaxPlannedFaults    = 1000
	MaxConcurrentFaults = 32
	// MaxTTLMultiple bounds N in NxTTL; MaxDuration bounds any duration written in a spec.
	MaxTTLMultiple = 10000
	MaxDuration    = 1000 * time.Hour
	// MinFaultDuration is the shortest for=, every= and lease TTL a plan takes: below it a
	// fault cannot even be applied before it is due to heal.
	MinFaultDuration = time.Millisecond
)

// errTooMany is the message for a plan above MaxPlannedFaults.
func errTooMany(what string, n int) error {
	return fmt.Errorf("%s plans %d faults or more, more than %d: use fewer faults, a longer every= or count=, or a shorter --time", what, n, MaxPlannedFaults)
}

// triggerWorstCase is the most occurrences a trigger can start in the phase: its count=, or
// as many as its cooldown lets fit.
func triggerWorstCase(pt PlannedTrigger, phase time.Duration) int {
	every, length := time.Duration(pt.Every), time.Duration(pt.After)+time.Duration(pt.Fault.For)
	fit := int64(MaxPlannedFaults + 1)
	if every > 0 && length <= phase {
		fit = min(fit, int64((phase-length)/every)+1)
	}
	if pt.Count > 0 && int64(pt.Count) < fit {
		return pt.Count
	}
	return int(fit)
}

// CheckCaps refuses a plan with more than MaxPlannedFaults faults or more than
// MaxConcurrentFaults in effect at once, counting every source: planned occurrences and
// each trigger at its worst case (all its occurrences; one of them in effect at any time).
func (p Plan) CheckCaps() error {
	phase := time.Duration(p.FaultPhase)
	n := len(p.Faults)
	for _, pt := range p.Triggers {
		n += triggerWorstCase(pt, phase)
		if n > MaxPlannedFaults {
			break
		}
	}
	if n > MaxPlannedFaults {
		return errTooMany("--nemesis (triggered faults counted at their most)", n)
	}
	type edge struct {
		at    time.Duration
		delta int
	}
	var edges []edge
	for _, f := range p.Faults {
		edges = append(edges, edge{time.Duration(f.At), 1}, edge{satAdd(time.Duration(f.At), time.Duration(f.For)), -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // an end at t frees its slot before a start at t
	})
	open, peak := 0, 0
	for _, e := range edges {
		open += e.delta
		peak = max(peak, open)
	}
	// A trigger has one occurrence at a time, and may fire while the planned peak holds.
	peak += len(p.Triggers)
	if peak > MaxConcurrentFaults {
		return fmt.Errorf("--nemesis has %d faults in effect at once (each trigger counts one), more than %d: spread them out (every=, at=) or use fewer", peak, MaxConcurrentFaults)
	}
	return nil
}

// CheckGiven validates a plan given whole rather than built here (replay, shrink, a
// config.json that may have been edited): every fault of a known kind with its parameters
// passing the kind's checks, every time inside the phase, triggers well formed, and the caps.
func (p Plan) CheckGiven() error {
	phase := time.Duration(p.FaultPhase)
	if phase <= 0 || phase > MaxDuration {
		return fmt.Errorf("the plan's fault phase %s is not in (0, %s]", phase, MaxDuration)
	}
	if len(p.Faults) > MaxPlannedFaults {
		return errTooMany("the given plan", len(p.Faults))
	}
	ids := map[int]bool{}
	for _, f := range p.Faults {
		at, length := time.Duration(f.At), time.Duration(f.For)
		switch {
		case f.ID <= 0 || ids[f.ID]:
			return fmt.Errorf("fault id %d: ids must be > 0 and unique", f.ID)
		case at < 0 || length <= 0 || at > phase || length > phase-at:
			return fmt.Errorf("fault %d: at=%s for=%s does not fit in the %s fault phase (0 <= at, 0 < for, at+for <= phase)", f.ID, at, length, phase)
		}
		ids[f.ID] = true
		if err := checkGivenFault(f); err != nil {
			return fmt.Errorf("fault %d: %w", f.ID, err)
		}
	}
	for i, pt := range p.Triggers {
		if _, err := ParseTrigger(pt.On); err != nil {
			return fmt.Errorf("trigger %d: %w", i+1, err)
		}
		after, length, every := time.Duration(pt.After), time.Duration(pt.Fault.For), time.Duration(pt.Every)
		switch {
		case after < 0 || length <= 0 || after > phase || length > phase-after:
			return fmt.Errorf("trigger %d (on=%s): after=%s for=%s does not fit in the %s fault phase", i+1, pt.On, after, length, phase)
		case every < after+length:
			return fmt.Errorf("trigger %d (on=%s): its cooldown every=%s must be at least after+for (%s)", i+1, pt.On, every, after+length)
		case pt.Count < 0:
			return fmt.Errorf("trigger %d (on=%s): count=%d is negative", i+1, pt.On, pt.Count)
		}
		if err := checkGivenFault(pt.Fault); err != nil {
			return fmt.Errorf("trigger %d (on=%s): %w", i+1, pt.On, err)
		}
	}
	return p.CheckCaps()
}

func checkGivenFault(f PlannedFault) error {
	k, ok := kinds[f.Kind]
	if !ok {
		return fmt.Errorf("unknown fault kind %q (known: %v)", f.Kind, KindNames())
	}
	d := k.def()
	for key, v := range f.Params {
		var pd *paramDef
		for i := range d.params {
			if d.params[i].key == key {
				pd = &d.params[i]
			}
		}
		if pd == nil {
			return fmt.Errorf("%s takes no parameter %q", f.Kind, key)
		}
		if pd.check != nil {
			if err := pd.check(v); err != nil {
				return fmt.Errorf("%s=%s: %w", key, v, err)
			}
		}
	}
	return nil
}

// satAdd adds two non-negative durations, saturating instead of wrapping.
func satAdd(a, b time.Duration) time.Duration {
	if a > 0 && b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// checkDurRange refuses a duration written beyond what any run uses.
func checkDurRange(d Dur, text string) error {
	if d.TTLs != 0 {
		return nil // ParseDur bounds N
	}
	if d.D > MaxDuration || d.D < -MaxDuration {
		return fmt.Errorf("%s is longer than %s: no run lasts that long", text, MaxDuration)
	}
	return nil
}
