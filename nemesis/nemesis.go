// Package nemesis injects faults into a running splitbrain run: pauses (SIGSTOP and cgroup
// freeze), crashes with restart, network partitions and packet loss (iptables in the
// target's network namespace, applied from a tools sidecar), and clock skew. A Schedule is
// parsed from a readable spec or a named profile; Plan turns it into concrete start times
// and seeded target choices (same seed, same plan); a Nemesis applies a plan against the
// live run, records every fault start and end in the history, and heals everything on
// every exit path (HealAll). docs/faults.md is the user-facing description.
//
// Use from the run lifecycle:
//
//	sched, err := nemesis.Parse(spec)                      // bad specs: error with the valid form
//	plan, err := sched.Plan(seed, faultPhase, topology)    // pure; store it in config.json
//	nem := nemesis.New(env, plan.Topology)
//	err = nem.Run(faultsCtx, plan)                         // returns at the end of the plan or on cancel
//	err = nem.HealAll(ctx)                                 // on every exit path, before teardown
package nemesis

import "time"

// Topology is what planning needs to know of a run before it starts: names, store kind and
// the lease TTL that "xTTL" durations refer to.
type Topology struct {
	Candidates []string      `json:"candidates"`
	StoreNodes []string      `json:"store_nodes"`
	StoreKind  string        `json:"store_kind"`
	TTL        time.Duration `json:"ttl"`
}

// Plan is a schedule made concrete for one run: start offsets, durations and seeded target
// choices. It is a pure function of (schedule, seed, fault phase, topology) and is stored
// in the run's config.json; replay compares plans.
type Plan struct {
	Schedule   string         `json:"schedule"` // canonical schedule spec
	Seed       int64          `json:"seed"`
	FaultPhase Duration       `json:"fault_phase"`
	TTL        Duration       `json:"ttl"`
	Faults     []PlannedFault `json:"faults"` // sorted by At, then ID
	// Triggers are the faults that start on an event (on=EVENT), in schedule order. Their
	// occurrences get fault ids after the planned ones, in the order they fire.
	Triggers []PlannedTrigger `json:"triggers,omitempty"`
	Topology Topology         `json:"topology"`
}

// PlannedFault is one occurrence of a fault.
type PlannedFault struct {
	ID   int      `json:"id"`   // fault_id in the history, from 1 in plan order
	Kind string   `json:"kind"` // pause, freeze, kill, partition, clock, loss
	Spec string   `json:"spec"` // canonical spec of the fault it came from
	At   Duration `json:"at"`   // offset from the start of the fault phase
	For  Duration `json:"for"`  // how long it stays before it is healed
	// Target is the target expression; live ones (leader, follower, store-leader) are
	// resolved when the fault starts, seeded ones are already in Chosen.
	Target string `json:"target,omitempty"`
	// Chosen holds the nodes picked from the seed (random-candidate, store-node,
	// store-minority, the order of halves/rings, ...).
	Chosen []string `json:"chosen,omitempty"`
	// Params are the kind-specific parameters with defaults filled in and xTTL resolved.
	Params map[string]string `json:"params,omitempty"`
	// Grudge is the partition when its shape is fixed at plan time (halves, rings, ...).
	Grudge Grudge `json:"grudge,omitempty"`
	// Pick breaks ties among live candidates (which follower) deterministically.
	Pick uint64 `json:"pick"`
	// Trigger is set on an occurrence of a triggered fault: the event that fired it.
	Trigger *FiredTrigger `json:"trigger,omitempty"`
}

// Duration marshals as a Go duration string ("6s") so plans stay readable.
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ActiveFault is a fault currently applied (for status lines).
type ActiveFault struct {
	ID      int
	Kind    string
	Targets []string
	Since   time.Time
}
