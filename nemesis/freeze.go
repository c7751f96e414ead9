package nemesis

import (
	"context"
	"errors"
	"fmt"
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

func (freezeKind) apply(ctx context.Context, n *Nemesis, pf PlannedFault) (*applied, error) {
	names, err := n.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	_, err = forEachTarget(names, func(name string) error {
		nd, err := n.node(name)
		if err != nil {
			return err
		}
		if err := nd.Freeze(ctx); err != nil {
			return err
		}
		n.mu.Lock()
		n.frozen[name] = true
		n.mu.Unlock()
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
			if err := n.thaw(ctx, name); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	return &applied{targets: names, heal: heal}, err
}

// thaw unfreezes a node this nemesis froze and checks Docker no longer reports it paused.
func (n *Nemesis) thaw(ctx context.Context, name string) error {
	nd, err := n.node(name)
	if err != nil {
		return err
	}
	st, err := nd.State(ctx)
	if err != nil {
		return fmt.Errorf("thaw %s: %w", name, err)
	}
	if st.Paused {
		if err := nd.Thaw(ctx); err != nil {
			return fmt.Errorf("thaw %s: %w", name, err)
		}
		if st, err = nd.State(ctx); err != nil || st.Paused {
			return fmt.Errorf("thaw %s: still paused (%v)", name, err)
		}
	}
	n.mu.Lock()
	delete(n.frozen, name)
	n.mu.Unlock()
	return nil
}
