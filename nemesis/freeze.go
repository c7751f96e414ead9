package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// freeze: docker pause (cgroup freezer) of a whole node, unpause at the end. Unlike pause it
// stops every process of the container atomically and Docker reports it as paused; the
// network namespace keeps answering at the TCP level.
type freezeKind struct{}

func (freezeKind) def() kindDef {
	return kindDef{Traits: Traits{
		Name:          "freeze",
		Summary:       "freeze a whole node with the cgroup freezer (docker pause), thaw after for=",
		DefaultTarget: TargetLeader,
		DefaultFor:    "2xTTL",
		Classes:       []NodeClass{ClassCandidate, ClassStore},
		Colour:        "#0e9fb0",
		Started:       "frozen",
		Healed:        "thawed",
		Silences:      true,
	}}
}

func (freezeKind) apply(ctx context.Context, c *containers, pf PlannedFault) (*applied, error) {
	names, err := c.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	_, err = forEachTarget(names, func(name string) error {
		nd, err := c.node(name)
		if err != nil {
			return err
		}
		if err := freezeRetrying(ctx, nd); err != nil {
			return err
		}
		c.frozenNow(name)
		st, err := nd.State(ctx)
		if err != nil {
			return err
		}
		if !st.Paused {
			return fmt.Errorf("docker reports %s as %q after freeze, not paused", name, st.Status)
		}
		return nil
	})
	heal := func(ctx context.Context) error {
		var errs []error
		for _, name := range names {
			if err := c.thaw(ctx, name); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	return &applied{targets: names, heal: heal}, err
}

// freezeAttempts: how often a freeze is tried when the engine reports the cgroup freezer
// stuck. runc gives up with "unable to freeze" when the cgroup stays FREEZING (cgroup v1:
// a task in uninterruptible sleep, a vfork parent, cannot be frozen until it leaves it) and
// leaves the container thawed; seen on a JVM candidate at load (2026-11-29). There is no
// event to wait for (runc already polls the freezer's state); a fresh attempt a moment later
// usually finds the task out of that sleep.
const freezeAttempts = 4

// freezeRetrying freezes nd, trying again after a stuck freezer, and returns the last error.
func freezeRetrying(ctx context.Context, nd Node) error {
	var err error
	for i := 0; i < freezeAttempts; i++ {
		if err = nd.Freeze(ctx); err == nil || !strings.Contains(err.Error(), "unable to freeze") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(i+1) * 100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%w (tried %d times)", err, freezeAttempts)
}
