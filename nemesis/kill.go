package nemesis

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// kill: SIGKILL the node's PID 1 (a crash: no handler, no graceful resign), restart the same
// container after for=. The restarted node gets a new host PID and a fresh network
// namespace (its iptables rules are gone, so is its sidecar); everything is looked up
// again afterwards, peers address it by alias.
type killKind struct{}

func (killKind) def() kindDef {
	return kindDef{Traits: Traits{
		Name:          "kill",
		Summary:       "SIGKILL a node (crash), restart it after for=",
		DefaultTarget: TargetLeader,
		DefaultFor:    "1xTTL",
		Classes:       []NodeClass{ClassCandidate, ClassStore},
		Crash:         true,
		Colour:        "#6e2c00",
		Started:       "killed",
		Healed:        "restarted",
		Silences:      true,
	}}
}

func (killKind) apply(ctx context.Context, c *containers, pf PlannedFault) (*applied, error) {
	names, err := c.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	var hit []string
	var sentT int64 // the first SIGKILL's send: the fault's start
	_, err = forEachTarget(names, func(name string) error {
		nd, err := c.node(name)
		if err != nil {
			return err
		}
		c.killing(name)
		hit = append(hit, name)
		if sentT == 0 {
			sentT = history.Now()
		}
		t, err := sigkill(ctx, nd)
		if err != nil {
			return err
		}
		c.record(history.Event{Source: history.SourceHarness, Kind: history.KindSignal, T: t, Node: name, Signal: "SIGKILL"})
		c.stoppedNow(ctx, name)
		return waitUntil(ctx, 10*time.Second, func() (bool, error) {
			st, err := nd.State(ctx)
			return err == nil && !st.Running, err
		}, name+" still running after SIGKILL")
	})
	heal := func(ctx context.Context) error {
		return eachParallel(hit, "", func(name string) error { return c.restart(ctx, name) })
	}
	if len(hit) == 0 {
		return nil, err
	}
	// The kill ends when the last of its nodes runs again: an in-memory store comes back
	// empty then, which a checker must see as before what follows (checkers.AttributeCause).
	ended := func() int64 {
		var last int64
		for _, name := range hit {
			t := c.startedAt(name)
			if t < sentT {
				return 0 // not started by this heal (already running): the heal's return stands
			}
			last = max(last, t)
		}
		return last
	}
	return &applied{targets: names, heal: heal, beganT: sentT, endedT: ended}, err
}

// sigkill kills the node's PID 1 and returns when the kill took effect. Docker's kill call
// returns only once the daemon has seen the exit (0.1-0.5 s later), long enough for
// PostgreSQL to elect the next leader "before" the fault; a kill(2) of the host PID is in
// effect when it returns. The PID is used only when /proc shows it in the container's
// cgroup (the harness shares the engine's PID namespace, and the PID was not reused);
// otherwise (Docker Desktop, a remote engine, a race) Docker's kill is used, stamped when it
// returns: late for failover times, safe for tenure ends.
func sigkill(ctx context.Context, nd Node) (int64, error) {
	if pid, err := nd.HostPID(ctx); err == nil && pid > 1 && pidInContainer(pid, nd.ID()) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			return history.Now(), nil
		}
	}
	if err := nd.Kill(ctx, "SIGKILL"); err != nil {
		return 0, err
	}
	return history.Now(), nil
}

// pidInContainer reports whether host pid belongs to the container with the given id.
func pidInContainer(pid int, id string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return err == nil && len(id) >= 12 && strings.Contains(string(b), id)
}

// waitUntil polls cond every 50 ms until it holds, errors, or within passes.
func waitUntil(ctx context.Context, within time.Duration, cond func() (bool, error), what string) error {
	deadline := time.Now().Add(within)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return fmt.Errorf("%s (waited %s)", what, within)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
