// Package runtime implements the candidate contract (docs/candidates.md) for Go recipes:
// environment, event output, the skewable clock, the leader write loop and SIGTERM handling.
// A recipe supplies only its election logic through the Recipe interface and one Definition
// (usually a Spec) listed in candidates.Registry.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
)

// Recipe is one election algorithm bound to one candidate. The runtime calls Campaign, then
// (after loss or on SIGTERM) Resign, and finally Close; never concurrently.
type Recipe interface {
	// Campaign blocks until this candidate leads or ctx ends. It may be called again after
	// a term was lost; it must then start from a clean state (new session, new key).
	Campaign(ctx context.Context) (Term, error)
	// Resign gives up leadership, or what a failed campaign left behind, so that another
	// candidate can take over at once. It must only ever remove this candidate's own claim.
	Resign(ctx context.Context) error
	// Close releases connections. A Close without Resign is what a crash looks like to the
	// store only when the connection is severed abruptly; recipes resign before Close.
	Close() error
}

// Term is one tenure as leader.
type Term struct {
	Token int64 // fencing token, >= 1, monotone per store
	// CallT is when the acquire request that won was sent (history.Now(), CLOCK_MONOTONIC
	// ns). It goes out as call_t on elected, so token order is judged on grant time, not on
	// when elected was printed. 0: the runtime uses the start of the Campaign call.
	CallT int64
	// Lost is done when the recipe sees leadership lost; context.Cause(Lost) says why.
	Lost context.Context
	// Valid, when set, is a cheap local check (no I/O) called before every write, e.g. a
	// lease deadline on the candidate clock. An error ends the term with that reason.
	Valid func() error
}

// Timing is a recipe's effective timing for a configuration, with the bounds the tests and
// checkers expect when no fault is active.
type Timing struct {
	TTL   time.Duration // lease/session length actually used (after rounding to what the store allows)
	Renew time.Duration // renew/keepalive period (0 = done by the store client)
	Retry time.Duration // poll period of a waiting candidate (0 = watch-based)
	// HandoffBound: SIGTERM of the leader until another candidate is elected.
	HandoffBound time.Duration
	// FailoverBound: crash (SIGKILL) of the leader until another candidate is elected.
	FailoverBound time.Duration
	// StartBound: from every candidate's campaigning to a first leader's writes, at most, for
	// a recipe slower to start than any warmup would allow (0: a warmup's length is enough).
	// The warmup of an event-ended run waits up to it for that leader.
	StartBound time.Duration
}

// Env is what a recipe gets to work with.
type Env struct {
	contract.Config
	Timing Timing
	Clock  *Clock
	// Logf writes a log line to stderr (kept as the node's log, not an event).
	Logf func(format string, args ...any)
	// StepFn prints a step event; recipes call Step. nil (tests) prints nothing.
	StepFn func(name string)
}

// Step announces that the recipe passed one of its declared steps (Info.Steps), e.g.
// "lock-acquired" right after the store granted the lock: an optional contract event that
// faults can trigger on (nemesis on=step:NAME) so a window between two store commands can
// be hit. Call it at the moment the step happens, before the next store command.
func (e Env) Step(name string) {
	if e.StepFn != nil {
		e.StepFn(name)
	}
}

// Info describes a recipe: what listings, the harness and the matrix need to know.
type Info struct {
	Name    string
	Store   string // contract.Store*: the only store the recipe runs on
	Summary string
	// ClockAware: the recipe takes lease decisions on the candidate clock (Env.Clock), so
	// clock faults apply to it.
	ClockAware bool
	// Negative marks deliberately broken recipes (negative controls).
	Negative bool
	// Steps are the step events the recipe emits (Env.Step), in the order they happen in a
	// campaign; a nemesis trigger on=step:NAME for a name not listed here is refused.
	Steps []string
	// Fences: the recipe powers nodes off through the run's fence device (STONITH), so the
	// fence-* faults act on it and assess runs its fence checks.
	Fences bool
	// NoClockFaults says why clock faults do not reach the recipe's candidates ("": they
	// do): a run would record a clock step that nothing read, so such faults are refused.
	NoClockFaults string
}

// Definition is one entry of the recipe registry (candidates.Registry). Spec is the usual
// way to write one; a recipe may also be its own type implementing these three methods.
type Definition interface {
	Describe() Info
	// TimingFor is the recipe's effective timing for a configuration.
	TimingFor(c contract.Config) Timing
	// NewRecipe connects one candidate; Run calls it once per process.
	NewRecipe(ctx context.Context, env Env) (Recipe, error)
}

// Spec is a Definition written as a struct literal in the recipe's file.
type Spec struct {
	Name       string
	Store      string
	Summary    string
	ClockAware bool
	Negative   bool
	Steps      []string
	Fences     bool
	Timing     func(c contract.Config) Timing
	New        func(ctx context.Context, env Env) (Recipe, error)
}

// StepLeaderWork is the step the runtime emits for every recipe when a leader has checked
// its lease and starts its work gap (SPLITBRAIN_LEADER_WORK): the zombie leader's window.
const StepLeaderWork = "leader-work"

func (s Spec) Describe() Info {
	steps := append(slices.Clone(s.Steps), StepLeaderWork)
	return Info{Name: s.Name, Store: s.Store, Summary: s.Summary, ClockAware: s.ClockAware, Negative: s.Negative, Steps: steps, Fences: s.Fences}
}
func (s Spec) TimingFor(c contract.Config) Timing { return s.Timing(c) }
func (s Spec) NewRecipe(ctx context.Context, env Env) (Recipe, error) {
	return s.New(ctx, env)
}

// Registry is an explicit list of recipes; candidates.Registry is the project's one list.
type Registry []Definition

// Check reports incomplete entries and duplicate names (TestRegistry runs it).
func (r Registry) Check() error {
	var errs []error
	seen := map[string]bool{}
	for i, d := range r {
		in := d.Describe()
		if in.Name == "" || in.Store == "" {
			errs = append(errs, fmt.Errorf("registry entry %d (%T) has no name or store: %+v", i, d, in))
		}
		if s, ok := d.(Spec); ok && (s.New == nil || s.Timing == nil) {
			errs = append(errs, fmt.Errorf("recipe %s: Spec needs both New and Timing", in.Name))
		}
		for _, st := range in.Steps {
			if !contract.ValidStepName(st) {
				errs = append(errs, fmt.Errorf("recipe %s: step name %q: use letters, digits, '-', '_', '.'", in.Name, st))
			}
		}
		if seen[in.Name] {
			errs = append(errs, fmt.Errorf("recipe %s is listed twice", in.Name))
		}
		seen[in.Name] = true
	}
	return errors.Join(errs...)
}

// Lookup returns the recipe called name.
func (r Registry) Lookup(name string) (Definition, error) {
	for _, d := range r {
		if d.Describe().Name == name {
			return d, nil
		}
	}
	return nil, fmt.Errorf("unknown recipe %q (known: %s)", name, strings.Join(r.Names(), ", "))
}

// LookupFor returns recipe name and checks that it runs on store; the error names the
// recipes that do.
func (r Registry) LookupFor(name, store string) (Definition, error) {
	d, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	if got := d.Describe().Store; got != store {
		return nil, fmt.Errorf("recipe %q runs on store %q, not %q (recipes for %s: %s)",
			name, got, store, store, strings.Join(r.NamesFor(store), ", "))
	}
	return d, nil
}

// Names lists the recipes, sorted.
func (r Registry) Names() []string { return r.NamesFor("") }

// NamesFor lists the recipes that run on store ("" = all), sorted.
func (r Registry) NamesFor(store string) []string {
	var out []string
	for _, d := range r {
		if in := d.Describe(); store == "" || in.Store == store {
			out = append(out, in.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Infos describes every recipe, sorted by name.
func (r Registry) Infos() []Info {
	out := make([]Info, 0, len(r))
	for _, d := range r {
		out = append(out, d.Describe())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
