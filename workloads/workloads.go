// Package workloads drives what the harness itself does to the candidates during the faults
// phase, besides the nemesis: nothing (steady: leaders write on their own) or graceful
// handoffs. One file per workload; one registry line adds one.
package workloads

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Env is what a workload may do to a live run. The run lifecycle implements it.
type Env interface {
	// Leader is the candidate that most recently became leader and still believes it leads.
	Leader() (node string, token int64, ok bool)
	// WaitLeaderWrites waits until that leader has had n writes accepted (as it reported
	// them) since its election, and returns it; or returns ctx's error.
	WaitLeaderWrites(ctx context.Context, n int) (node string, token int64, err error)
	// Signal sends sig (SIGTERM, SIGKILL) to a candidate and records a signal event with reason.
	Signal(ctx context.Context, node, sig, reason string) error
	// WaitExit waits until the candidate's process has exited, or ctx ends.
	WaitExit(ctx context.Context, node string) error
	// Restart starts an exited candidate again (recorded as process-start).
	Restart(ctx context.Context, node string) error
	// Logf reports progress of the workload (may be discarded).
	Logf(format string, args ...any)
}

// Options tune the workloads; zero values take each workload's defaults.
type Options struct {
	TTL          time.Duration // the run's lease TTL, for TTL-relative defaults
	HandoffEvery time.Duration // handoff: time between SIGTERMs of the leader (0: on its HandoffWrites-th accepted write)
	HandoffPause time.Duration // handoff: how long a resigned leader stays down
}

// Workload runs during the faults phase until ctx ends. It must not leave a candidate down
// for good: the run restarts any candidate that is not running before recovery, but a
// workload restarts what it stopped whenever it has the time to.
type Workload interface {
	Name() string
	// Describe says in one line what the workload does with these options (for config.json
	// and the terminal).
	Describe() string
	Run(ctx context.Context, env Env) error
}

type factory func(Options) (Workload, error)

var registry = map[string]factory{
	"steady":  newSteady,
	"handoff": newHandoff,
}

// Names lists the workloads, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New makes the named workload; an unknown name is an error listing the valid ones.
func New(name string, opts Options) (Workload, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown workload %q: valid workloads are %s", name, strings.Join(Names(), ", "))
	}
	return f(opts)
}
