package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness/history"
)

// kill: SIGKILL the node's PID 1 (a crash: no handler, no graceful resign), restart the same
// container after for=. The restarted node gets a new host PID and a fresh network
// namespace (its iptables rules are gone, so is its sidecar); everything is looked up
// again afterwards, peers address it by alias.
func init() {
	register(&kindDef{
		name:          "kill",
		summary:       "SIGKILL a node (crash), restart it after for=",
		defaultTarget: TargetLeader,
		defaultFor:    "1xTTL",
		apply:         applyKill,
	})
}

func applyKill(ctx context.Context, n *Nemesis, pf PlannedFault) (*applied, error) {
	names, err := n.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	var hit []string
	var killedT int64
	_, err = forEachTarget(names, func(name string) error {
		nd, err := n.node(name)
		if err != nil {
			return err
		}
		n.mu.Lock()
		n.killed[name] = true
		n.mu.Unlock()
		hit = append(hit, name)
		if err := nd.Kill(ctx, "SIGKILL"); err != nil {
			return err
		}
		// The kill is in effect now; waiting for Docker to report the exit takes 0.1-0.5 s,
		// in which a fast recipe (PostgreSQL) already elects the next leader.
		killedT = history.Now()
		n.forgetSidecar(ctx, name)
		return waitUntil(ctx, 10*time.Second, func() (bool, error) {
			st, err := nd.State(ctx)
			return err == nil && !st.Running, err
		}, name+" still running after SIGKILL")
	})
	heal := func(ctx context.Context) error {
		var errs []error
		for _, name := range hit {
			if err := n.restart(ctx, name); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	if len(hit) == 0 {
		return nil, err
	}
	return &applied{targets: names, heal: heal, inEffectT: killedT}, err
}

// restart starts a node this nemesis killed, if it is not running, and waits for it.
func (n *Nemesis) restart(ctx context.Context, name string) error {
	nd, err := n.node(name)
	if err != nil {
		return err
	}
	st, err := nd.State(ctx)
	if err != nil {
		return fmt.Errorf("restart %s: %w", name, err)
	}
	if !st.Running {
		n.forgetSidecar(ctx, name)
		if err := nd.Start(ctx); err != nil {
			return fmt.Errorf("restart %s: %w", name, err)
		}
		if st, err = nd.State(ctx); err != nil || !st.Running {
			return fmt.Errorf("restart %s: not running afterwards (%s, %v)", name, st.Status, err)
		}
	}
	n.mu.Lock()
	delete(n.killed, name)
	n.mu.Unlock()
	return nil
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
