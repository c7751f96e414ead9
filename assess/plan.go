// Package assess answers "is my election safe?" in one call: it plans the battery of checks a
// store and a candidate make sense for (from the store facts and the nemesis profiles), runs
// each check as a matrix-style row (suite.CaseOf: event-paced faults, until: goals, derived
// failover bounds) first on the unfenced resource and, where that fails, again on the fenced
// one, within a time budget, resumably, and writes a scorecard (HTML, JSON, JUnit).
package assess

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/candidates/libraries"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// stepName is the form of a step a user declares with --steps.
// It is the contract's (docs/candidates.md §2): 1-64 letters, digits, '-', '_' or '.'.
var stepName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// DefaultBudget is the time an assessment may take when Options.Budget is zero.
const DefaultBudget = 10 * time.Minute

// Options say what to assess and how.
type Options struct {
	// Recipe is a built-in recipe (splitbrain candidate --list); or give CandidateCmd or
	// CandidateImage, an external candidate speaking the contract (docs/candidates.md).
	Recipe string
	// CandidateCmd is the candidate's executable (a script, a static binary, or a Go main
	// package directory, built static) plus nothing else: the contract passes no arguments,
	// so only CandidateCmd[0] is used and more elements are refused.
	CandidateCmd []string
	// CandidatePackages are Debian packages a CandidateCmd script needs (python3, curl, ...).
	CandidatePackages []string
	CandidateImage    string
	Store             string
	// Budget bounds the whole assessment (0 = DefaultBudget). A check is started only when
	// its estimated cost fits the rest; checks that do not fit are listed as not run.
	Budget time.Duration
	// OutDir holds the scorecard, the resume state and the run directories (runs/).
	OutDir string
	// Progress receives one line per check started and ended; nil = silent.
	Progress io.Writer
	// Checks, when set, is the subset of the battery to run, by check name.
	Checks []string
	// Seed of every check's fault plan (0 = 1: an assessment is reproducible by default).
	Seed int64
	// Resource is the resource the verdict is judged on: "fenced" (default: the resource
	// rejects stale tokens, as `splitbrain run` assumes) or "unfenced" (your resource does
	// not check tokens, so a check that is unsafe without the fence fails the assessment).
	Resource string
	// TTL handed to the candidates (0 = harness default, 2 s).
	TTL time.Duration
	// ExploreRuns caps the bounded explore check's tries (0 = 2).
	ExploreRuns int
	// NoFencedRerun skips the fenced run after an unfenced failure.
	NoFencedRerun bool
	// Parallel is how many checks Run runs at once, each on a store cluster of its own
	// (0 = 1). Checks start in battery order and the scorecard keeps it.
	Parallel int
	// Fence: the candidate powers nodes off through the run's fence device (STONITH), so the
	// fence checks apply. A recipe declares it (etcd-stonith); an external candidate cannot,
	// so for --candidate-cmd/--candidate-image the user says so.
	Fence bool
	// Steps are the steps (docs/candidates.md §2, "step" events) an external candidate
	// prints, declared by the user as a recipe declares them in its spec: a candidate that
	// prints leader-work as its work gap opens gets the zombie-window check. Refused with a
	// recipe, whose steps are known.
	Steps []string
	// Args is the command line recorded in each run's config.json and the scorecard.
	Args []string
	// Started, when set, is called with the id of each run ("run") and each store cluster
	// of the session's pool ("pool") before it starts anything: the ids `splitbrain clean
	// --run` takes when the process is killed before it could clean up.
	Started func(what, id string)
}

// leaderWorkGap is the zombie window: the gap between a leader's lease check and its write.
var leaderWorkGap = time.Second

// battery is every check, in the order they run: first the ones that catch the commonest
// mistakes (handoff: a token that does not grow; pause-leader: a leader that never checks
// its lease), so that a budget running out still leaves a broken candidate flagged.
// applies says whether the check makes sense for a store and a candidate; nil = always.
type entry struct {
	Check
	applies func(store storekinds.Def, storeless bool, steps []string) (bool, string)
	// notForLibraries, when set, is why the check cannot apply to a library run as shipped.
	notForLibraries string
	// needsFence: only for a candidate that uses the fence device (Options.Fence or a
	// recipe's Fences): for any other the fence fault changes nothing.
	needsFence bool
}

func needStore(_ storekinds.Def, storeless bool, _ []string) (bool, string) {
	if storeless {
		return false, "no store: the candidates elect among themselves"
	}
	return true, ""
}

func battery() []entry {
	paced := func(name, fault, purpose, catches string) entry {
		return entry{Check: Check{Name: name, Fault: fault, Paced: true, Duration: 60 * time.Second, Purpose: purpose, Catches: catches}}
	}
	storeOnly := func(e entry) entry { e.applies = needStore; return e }
	outage := func(e entry, ttls int) entry { e.OutageTTLs = ttls; return e }
	// A fence check pauses the leader in its work gap (on write:3, which every candidate
	// gives; the gap opens right after a write) while the device is broken. outage is how
	// long the device cannot confirm a power-off: no safe failover comes sooner.
	fenceCheck := func(name, kind string, outageTTLs int, purpose, catches string) entry {
		e := outage(paced(name, kind+"-pause-leader", purpose, catches), outageTTLs)
		e.Fence, e.LeaderWork, e.needsFence = kind, &leaderWorkGap, true
		return e
	}
	return []entry{
		{Check: Check{Name: "handoff", Fault: "none", Workload: "handoff", Until: "handoffs=3", Duration: 60 * time.Second,
			Purpose: "graceful handoff: the leader gets SIGTERM three times and must resign; the next leader's token must be larger",
			Catches: "a token that does not grow across leaders (a per-process counter, a key version), or a resign that leaves the lease behind"}},
		paced("pause-leader", "pause-leader", "SIGSTOP the leader for 3xTTL after its 3rd write (a GC pause longer than its lease)",
			"a leader that writes after waking up without checking its lease (a zombie leader)"),
		paced("kill-leader", "kill-leader", "crash the leader (SIGKILL, restart after 1xTTL): a successor within the failover bound",
			"a lease that never expires, or a successor elected while the old lease still holds"),
		{Check: Check{Name: "fault-free", Fault: "none", Until: "writes=30", Duration: 40 * time.Second,
			Purpose: "no faults: one leader is elected and its writes are accepted",
			Catches: "a candidate that cannot elect, write or follow the contract at all"}},
		paced("freeze-leader", "freeze-leader", "freeze the leader's whole container for 3xTTL (a VM stall)",
			"as pause-leader, with the candidate's helpers and connections frozen too"),
		{Check: Check{Name: "zombie-window", Fault: "pause:target=leader,on=step:leader-work,for=3xTTL,count=1", Duration: 60 * time.Second,
			LeaderWork: &leaderWorkGap,
			Purpose:    "pause the leader inside its work gap, after its lease check and before its write (the classic zombie)",
			Catches:    "a leader whose write decided before a pause lands after a successor's: only a fencing token stops it"},
			applies: func(_ storekinds.Def, _ bool, steps []string) (bool, string) {
				if slices.Contains(steps, runtime.StepLeaderWork) {
					return true, ""
				}
				return false, "the candidate declares no " + runtime.StepLeaderWork + " step to pause on (Go recipes and the Python and Node library recipes do; an external candidate declares it with --steps " + runtime.StepLeaderWork + ")"
			}},
		fenceCheck("fence-lying", "fence-lying", 0,
			"pause the leader for 5xTTL while the fence device answers a power-off \"off\" at once and kills 6xTTL later",
			"a successor that trusts the device's acknowledgement and acts while the old leader still runs (read the power state back)"),
		// No confirmed power-off for the fault's 6xTTL.
		fenceCheck("fence-unreachable", "fence-unreachable", 6,
			"pause the leader for 5xTTL while the fence device answers nothing for 6xTTL",
			"a successor that acts after a fence timed out or failed (fencing \"best effort\")"),
		// A power-off asked just before the heal is still answered delay=3xTTL late.
		fenceCheck("fence-slow", "fence-slow", 9,
			"pause the leader for 5xTTL while the fence device carries out and answers every request 3xTTL late (for 6xTTL)",
			"a successor that gives up on a slow fence and acts anyway, or one whose late power-off kills a later leader"),
		storeOnly(paced("leader-cut-silent", "partition-leader-silent", "cut the leader off from the store for 3xTTL, packets dropped (requests hang)",
			"a leader that keeps believing while its renewals hang, past its lease")),
		storeOnly(paced("leader-cut-refused", "partition-leader-refused", "cut the leader off from the store for 3xTTL with TCP resets (requests fail at once)",
			"a leader that treats a failed renewal as still leading, or retries into a stale write")),
		{Check: paced("store-split", "partition-store-majority", "split the store so its own leader lands in the minority, for 3xTTL",
			"reads or lock grants served by a store minority (stale reads, no linearizable lock)").Check,
			applies: func(s storekinds.Def, storeless bool, _ []string) (bool, string) {
				if storeless {
					return needStore(s, storeless, nil)
				}
				if !s.HasLeader {
					return false, "the store elects no leader of its own"
				}
				return true, ""
			}},
		paced("clock-bump", "clock-bump-leader", "turn the leader's clock back by 3xTTL for 3xTTL",
			"a lease judged on wall-clock time, which a clock step makes last longer"),
		{Check: paced("clock-rate", "clock-slow-leader", "the leader's clock runs at half speed for 3xTTL",
			"a lease deadline taken from a clock that can run slow").Check,
			notForLibraries: "a library's clock is libfaketime's, which counts a rate from the process's start: a rate cannot begin mid-run without a jump (clock-bump applies)"},
		storeOnly(paced("latency", "delay-leader", "add 1xTTL of latency each way to the leader's store connections for 4xTTL",
			"a lease whose deadline is taken from the answer, not from the request's send time")),
		storeOnly(paced("half-open", "half-open-leader", "the leader's store connections stay open but carry nothing for 3xTTL",
			"a client without request timeouts: the leader hangs and believes on")),
		storeOnly(paced("reset", "reset-leader", "every store request of the leader fails with a connection reset for 3xTTL",
			"a leader that does not step down when it cannot renew")),
		storeOnly(outage(paced("store-outage", "all-store-pause", "the whole store hangs (every node SIGSTOPped) for 3xTTL",
			"a leader that keeps believing while no renewal can succeed"), 3)),
		storeOnly(paced("follower-cut-then-kill", "follower-cut-then-kill-leader", "cut a follower off from the store, heal, then kill the leader",
			"a waiter that lost its session and takes over unsafely")),
		paced("waiter-killed", "kill-follower", "SIGKILL a waiting candidate, restart it after 1xTTL",
			"a queue that stalls, or a restarted waiter that takes over a held lease"),
		{Check: Check{Name: "explore", Explore: true, Duration: 20 * time.Second,
			Purpose: "a bounded random search: schedules drawn from every fault kind, target and shape",
			Catches: "whatever the fixed checks above do not cover; a find replays and shrinks like any run"}},
	}
}

// Names lists every check name of the full battery, in order.
func Names() []string {
	var out []string
	for _, e := range battery() {
		out = append(out, e.Name)
	}
	return out
}

// Plan returns the battery for this store and candidate, each check on the unfenced
// resource. Options.Checks narrows it; a name outside the battery is an error.
func Plan(opts Options) ([]Check, error) {
	cs, _, err := PlanWithSkips(opts)
	return cs, err
}

// PlanWithSkips is Plan plus the checks left out, with the reason.
func PlanWithSkips(opts Options) ([]Check, []Skipped, error) {
	if err := opts.validate(); err != nil {
		return nil, nil, err
	}
	storeless := opts.Store == storekinds.None
	var def storekinds.Def
	if !storeless {
		d, ok := storekinds.Lookup(opts.Store)
		if !ok {
			return nil, nil, fmt.Errorf("unknown store %q: want one of %s, or none", opts.Store, strings.Join(storekinds.Names(), ", "))
		}
		def = d
	}
	var steps []string
	var noClock string
	fences := opts.Fence
	_, library := libraries.Lookup(opts.Recipe)
	if opts.Recipe != "" {
		d, err := candidates.Registry.Lookup(opts.Recipe)
		if err != nil {
			return nil, nil, err
		}
		in := d.Describe()
		if in.Store != opts.Store {
			return nil, nil, fmt.Errorf("recipe %s runs on store %s, not %s: give --store %s", opts.Recipe, in.Store, opts.Store, in.Store)
		}
		steps = in.Steps
		fences = fences || in.Fences
		noClock = in.NoClockFaults
	} else {
		steps = opts.Steps
	}
	want := map[string]bool{}
	for _, n := range opts.Checks {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(Names(), n) {
			return nil, nil, fmt.Errorf("unknown check %q: want some of %s", n, strings.Join(Names(), ", "))
		}
		want[n] = true
	}
	var out []Check
	var skipped []Skipped
	for _, e := range battery() {
		if len(want) > 0 && !want[e.Name] {
			continue
		}
		if library && e.notForLibraries != "" {
			skipped = append(skipped, Skipped{Name: e.Name, Why: e.notForLibraries})
			continue
		}
		if noClock != "" && movesCandidateClocks(e.Fault) {
			skipped = append(skipped, Skipped{Name: e.Name, Why: "clock faults do not reach this recipe's candidates: " + noClock})
			continue
		}
		if e.needsFence && !fences {
			skipped = append(skipped, Skipped{Name: e.Name, Why: "the candidate does not use the fence device (a recipe declares it; give --fence for an external candidate that does)"})
			continue
		}
		if e.applies != nil {
			if ok, why := e.applies(def, storeless, steps); !ok {
				skipped = append(skipped, Skipped{Name: e.Name, Why: why})
				continue
			}
		}
		c := e.Check
		if c.Fence != "" && !slices.Contains(steps, runtime.StepLeaderWork) {
			// Only a candidate that declares the step opens the gap; for any other the
			// paced goal must not wait on writes a gap would slow down.
			c.LeaderWork = nil
		}
		c.Resource = ResourceUnfenced
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, skipped, fmt.Errorf("no check of %v applies to store %s: %s", opts.Checks, opts.Store, skipText(skipped))
	}
	return out, skipped, nil
}

// movesCandidateClocks says the check's fault steps or slows a candidate's clock.
func movesCandidateClocks(fault string) bool {
	sched, err := nemesis.Parse(fault)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(sched.Faults, func(f nemesis.FaultSpec) bool {
		return f.Kind == "clock" && harness.ClockOnCandidates(f)
	})
}

func skipText(s []Skipped) string {
	var parts []string
	for _, k := range s {
		parts = append(parts, k.Name+" ("+k.Why+")")
	}
	return strings.Join(parts, "; ")
}

// validate names every problem of the options at once.
func (o *Options) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	who := 0
	for _, set := range []bool{o.Recipe != "", len(o.CandidateCmd) > 0, o.CandidateImage != ""} {
		if set {
			who++
		}
	}
	switch {
	case who == 0:
		bad("nothing to assess: give a recipe (%s), a candidate command or a candidate image", strings.Join(harness.RecipeNames(), ", "))
	case who > 1:
		bad("give one of recipe, candidate command and candidate image, not %d", who)
	}
	if len(o.CandidateCmd) > 1 {
		bad("candidate command %q: the contract passes no arguments; give one executable (wrap arguments in a script)", strings.Join(o.CandidateCmd, " "))
	}
	if len(o.Steps) > 0 && o.Recipe != "" {
		bad("steps %s: recipe %s declares its own steps; --steps is for an external candidate (--candidate-cmd, --candidate-image)", strings.Join(o.Steps, ","), o.Recipe)
	}
	for _, st := range o.Steps {
		if !stepName.MatchString(st) {
			bad("step %q: want the name the candidate prints in its step events, 1-64 letters, digits, '-', '_' or '.' (e.g. %s)", st, runtime.StepLeaderWork)
		}
	}
	if o.Store == "" {
		bad("no store: want one of %s, or none", strings.Join(storekinds.Names(), ", "))
	}
	if o.Budget < 0 {
		bad("budget %v: must not be negative", o.Budget)
	}
	if o.OutDir == "" {
		bad("no output directory: give one for the scorecard and the runs (e.g. assess-out)")
	}
	switch o.Resource {
	case "", ResourceFenced, ResourceUnfenced:
	default:
		bad("resource %q: want %s (your resource rejects stale tokens) or %s (it does not)", o.Resource, ResourceFenced, ResourceUnfenced)
	}
	if o.ExploreRuns < 0 || o.ExploreRuns > maxExploreRuns {
		bad("explore runs %d: want 1 to %d tries (0 = %d)", o.ExploreRuns, maxExploreRuns, exploreRuns)
	}
	if o.Parallel < 0 || o.Parallel > maxParallel {
		bad("parallel %d: want 1 to %d checks at once (0 = 1)", o.Parallel, maxParallel)
	}
	return errors.Join(errs...)
}

func (o Options) resource() string {
	if o.Resource == "" {
		if lib, ok := libraries.Lookup(o.Recipe); ok && !lib.Fenced {
			return ResourceUnfenced // the library gives no token: a fence would be ours, not its
		}
		return ResourceFenced
	}
	return o.Resource
}

// tokenless reports whether the assessed recipe is a library that gives no fencing token:
// no fenced rerun then, since the only token there is the adapter's label.
func (o Options) tokenless() bool {
	lib, ok := libraries.Lookup(o.Recipe)
	return ok && !lib.Fenced && o.CandidateImage == "" && len(o.CandidateCmd) == 0
}

func (o Options) seed() int64 {
	if o.Seed == 0 {
		return 1
	}
	return o.Seed
}

// maxParallel bounds Options.Parallel: each check at once adds a store cluster and three
// candidates to the machine.
const maxParallel = 4

// maxExploreRuns bounds Options.ExploreRuns: the explore check may make twice as many
// tries, each a run of 20-70 s, so 50 already outlasts any budget given to an assessment.
const maxExploreRuns = 50

func (o Options) parallel() int { return max(o.Parallel, 1) }

func (o Options) budget() time.Duration {
	if o.Budget == 0 {
		return DefaultBudget
	}
	return o.Budget
}
