// Package runtime implements the candidate contract (docs/candidates.md) for Go recipes:
// environment, event output, the skewable clock, the leader write loop and SIGTERM handling.
// A recipe supplies only its election logic through the Recipe interface and one Spec.
package runtime

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
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
}

// Env is what a recipe gets to work with.
type Env struct {
	contract.Config
	Timing Timing
	Clock  *Clock
	// Logf writes a log line to stderr (kept as the node's log, not an event).
	Logf func(format string, args ...any)
}

// Spec describes a recipe; one registry line in package candidates adds it.
type Spec struct {
	Name    string
	Store   string // contract.Store*: the only store the recipe runs on
	Summary string
	// ClockAware: the recipe takes lease decisions on the candidate clock (Env.Clock), so
	// clock faults apply to it.
	ClockAware bool
	// Negative marks deliberately broken recipes (negative controls).
	Negative bool
	Timing   func(c contract.Config) Timing
	New      func(ctx context.Context, env Env) (Recipe, error)
}

var (
	regMu    sync.Mutex
	registry = map[string]Spec{}
)

// Register adds a recipe; a duplicate or incomplete spec is a programming error.
func Register(s Spec) {
	regMu.Lock()
	defer regMu.Unlock()
	if s.Name == "" || s.Store == "" || s.New == nil || s.Timing == nil {
		panic(fmt.Sprintf("runtime.Register: incomplete spec %+v", s))
	}
	if _, dup := registry[s.Name]; dup {
		panic("runtime.Register: recipe " + s.Name + " registered twice")
	}
	registry[s.Name] = s
}

// Lookup returns the recipe called name.
func Lookup(name string) (Spec, error) {
	regMu.Lock()
	s, ok := registry[name]
	regMu.Unlock()
	if !ok {
		return Spec{}, fmt.Errorf("unknown recipe %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// LookupFor returns recipe name and checks that it runs on store.
func LookupFor(name, store string) (Spec, error) {
	s, err := Lookup(name)
	if err != nil {
		return s, err
	}
	if s.Store != store {
		var fit []string
		for _, o := range Specs() {
			if o.Store == store {
				fit = append(fit, o.Name)
			}
		}
		return s, fmt.Errorf("recipe %q runs on store %q, not %q (recipes for %s: %s)",
			name, s.Store, store, store, strings.Join(fit, ", "))
	}
	return s, nil
}

// Names lists the registered recipes, sorted.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Specs lists the registered recipes sorted by name.
func Specs() []Spec {
	var out []Spec
	for _, n := range Names() {
		s, _ := Lookup(n)
		out = append(out, s)
	}
	return out
}
