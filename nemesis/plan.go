package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"
)

// planner carries what a kind's plan hook needs.
type planner struct {
	topo Topology
	rng  *rand.Rand
}

// Plan makes the schedule concrete for one run. The result depends only on the arguments:
// the same seed gives the same plan (compare with encoding/json), a different seed moves
// start offsets, repeats and seeded target choices. Errors name the fault that cannot fit
// (too long for the phase, a shape impossible for the node count, a store that cannot be
// skewed, ...).
func (s Schedule) Plan(seed int64, faultPhase time.Duration, topo Topology) (Plan, error) {
	p := Plan{Schedule: s.String(), Seed: seed, FaultPhase: Duration(faultPhase), TTL: Duration(topo.TTL), Topology: topo, Faults: []PlannedFault{}}
	if len(s.Faults) == 0 {
		return p, nil
	}
	if topo.TTL <= 0 {
		return Plan{}, fmt.Errorf("plan: the lease TTL must be > 0 (it scales NxTTL durations)")
	}
	if topo.TTL < MinFaultDuration {
		return Plan{}, fmt.Errorf("plan: the lease TTL %s is below %s: no store or candidate works at that scale", topo.TTL, MinFaultDuration)
	}
	if faultPhase > MaxDuration {
		return Plan{}, fmt.Errorf("plan: the fault phase %s is longer than %s: use a shorter --time", faultPhase, MaxDuration)
	}
	if faultPhase <= 0 {
		return Plan{}, fmt.Errorf("plan: the fault phase must be longer than 0 to run %s", s)
	}
	var all []PlannedFault
	for i, f := range s.Faults {
		// One stream per fault of the schedule: adding a fault does not reshuffle the others.
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)+1))
		if f.On.IsSet() {
			pt, err := planTrigger(f, faultPhase, topo, rng)
			if err != nil {
				return Plan{}, fmt.Errorf("fault %q: %w", f, err)
			}
			p.Triggers = append(p.Triggers, pt)
			continue
		}
		occ, err := planFault(f, faultPhase, topo, rng)
		if err != nil {
			return Plan{}, fmt.Errorf("fault %q: %w", f, err)
		}
		all = append(all, occ...)
		if len(all) > MaxPlannedFaults {
			return Plan{}, errTooMany("--nemesis", len(all))
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].At < all[j].At })
	for i := range all {
		all[i].ID = i + 1
	}
	if all != nil {
		p.Faults = all
	}
	if err := p.CheckCaps(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

func planFault(f FaultSpec, phase time.Duration, topo Topology, rng *rand.Rand) ([]PlannedFault, error) {
	k := kinds[f.Kind]
	d := k.def()
	if len(d.Stores) > 0 && !slices.Contains(d.Stores, topo.StoreKind) {
		return nil, fmt.Errorf("%s applies to store %s only, not %q", d.Name, strings.Join(d.Stores, ", "), topo.StoreKind)
	}
	ttl := topo.TTL
	forD := f.For
	if !forD.Set {
		forD = mustDur(d.DefaultFor)
	}
	length := forD.Resolve(ttl)
	every := f.Every.Resolve(ttl)
	if length < MinFaultDuration {
		return nil, fmt.Errorf("for=%s resolves to %s: a fault must last at least %s", forD, length, MinFaultDuration)
	}
	if f.Every.Set && every < MinFaultDuration {
		return nil, fmt.Errorf("every=%s resolves to %s: the period must be at least %s", f.Every, every, MinFaultDuration)
	}
	if length > phase {
		return nil, fmt.Errorf("it lasts %s (for=%s) but the fault phase is only %s: shorten for= or lengthen the run", length, forD, phase)
	}
	if f.Every.Set && every <= length {
		return nil, fmt.Errorf("every=%s (%s) must be longer than for=%s (%s) so occurrences do not overlap", f.Every, every, forD, length)
	}
	jitter := f.Jitter.Resolve(ttl)
	if !f.Jitter.Set {
		jitter = every / 10
	} else if jitter < 0 || jitter > phase {
		return nil, fmt.Errorf("jitter=%s resolves to %s: it must be between 0 and the fault phase (%s)", f.Jitter, jitter, phase)
	}
	target := f.Target
	if target == "" {
		target = d.DefaultTarget
	}

	// First start: as written, else uniform in the first window that fits the fault.
	var first time.Duration
	if f.At.Set {
		first = f.At.Resolve(ttl)
		if first < 0 || first > phase {
			return nil, fmt.Errorf("at=%s resolves to %s: it must be between 0 and the fault phase (%s)", f.At, first, phase)
		}
		if first+length > phase {
			return nil, fmt.Errorf("at=%s plus for=%s ends after the fault phase (%s)", f.At, forD, phase)
		}
	} else {
		window := phase
		if f.Every.Set && every < phase {
			window = every
		}
		if slack := window - length; slack > 0 {
			first = time.Duration(rng.Int64N(int64(slack) + 1)).Round(time.Millisecond)
		}
	}

	var out []PlannedFault
	start := first
	for start+length <= phase {
		if len(out) >= MaxPlannedFaults { // refused before it is built: every=2ns would make billions
			return nil, errTooMany(fmt.Sprintf("every=%s (%s) in the %s fault phase", f.Every, every, phase), len(out)+1)
		}
		pf := PlannedFault{
			Kind: f.Kind, Spec: f.String(), At: Duration(start), For: Duration(length),
			Target: target, Params: map[string]string{}, Pick: rng.Uint64(),
		}
		for _, pd := range d.params {
			if v, ok := f.Params[pd.key]; ok {
				pf.Params[pd.key] = v
			} else if pd.def != "" {
				pf.Params[pd.key] = pd.def
			}
		}
		resolveParamDurs(pf.Params, ttl)
		if !d.ownTargets {
			chosen, err := chooseTargets(target, topo, rng)
			if err != nil {
				return nil, err
			}
			pf.Chosen = chosen
		}
		if ph, ok := k.impl().(planHook); ok {
			if err := ph.plan(&planner{topo: topo, rng: rng}, &f, &pf); err != nil {
				return nil, err
			}
		}
		out = append(out, pf)
		if !f.Every.Set || (f.Count > 0 && len(out) >= f.Count) {
			break
		}
		next := start + every
		if jitter > 0 {
			next += (time.Duration(rng.Int64N(2*int64(jitter)+1)) - jitter).Round(time.Millisecond)
		}
		if next < start+length {
			next = start + length // never overlap the previous occurrence
		}
		start = next
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no occurrence fits in the %s fault phase", phase)
	}
	return out, nil
}

// resolveParamDurs rewrites NxTTL values of duration params to concrete durations so the
// plan is self-contained.
func resolveParamDurs(params map[string]string, ttl time.Duration) {
	for k, v := range params {
		d, err := ParseDur(v)
		if err != nil || d.TTLs == 0 {
			continue
		}
		r := d.Resolve(ttl)
		s := r.String()
		if r > 0 && (len(v) > 0 && v[0] == '+') {
			s = "+" + s
		}
		params[k] = s
	}
}
