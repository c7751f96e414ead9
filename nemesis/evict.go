package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// evict: delete the Pod of a candidate whose process keeps running (the process does not
// learn of it): a force delete, or, paired with a partition, what follows an unreachable
// node (out-of-service taint, Node deletion, operator-lib's Become deleting a NotReady
// node's leader Pod; docs/faults.md). The heal is what the kubelet does when the node is back: it
// kills the containers of Pods that no longer exist (SIGKILL); the candidate is then
// started again with a new Pod, the replacement its Deployment would have made. There is
// no kubelet here: the harness plays the node (Env implements PodEnv), so the kind applies
// to the kubernetes store only. Pair it with a partition of the same candidate to play the
// unreachable node.
type evictKind struct{}

func (evictKind) def() kindDef {
	return kindDef{Traits: Traits{
		Name:          "evict",
		Summary:       "delete a candidate's Pod while its process keeps running (a force delete; with a partition, an unreachable node's Pod deleted); heal: SIGKILL it (the kubelet when the node returns) and start it with a new Pod",
		DefaultTarget: TargetLeader,
		DefaultFor:    "3xTTL",
		Classes:       []NodeClass{ClassCandidate},
		Stores:        []string{"kubernetes"},
		Crash:         true,
		Colour:        "#7d3c98",
		Started:       "evicted (its Pod deleted, its process still running)",
		Healed:        "killed and started with a new Pod",
	}}
}

// plan: node:NAME may name a store node; only candidates have Pods.
func (evictKind) plan(p *planner, _ *FaultSpec, pf *PlannedFault) error {
	for _, name := range pf.Chosen {
		if !slices.Contains(p.topo.Candidates, name) {
			return fmt.Errorf("evict hits candidates only (they have Pods), %s is a store node", name)
		}
	}
	return nil
}

func (evictKind) apply(ctx context.Context, c *containers, pf PlannedFault) (*applied, error) {
	pe, ok := c.env.(PodEnv)
	if !ok {
		return nil, fmt.Errorf("evict: this run's candidates have no Pods (store %s)", c.env.StoreKind())
	}
	names, err := c.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	var hit []string
	var evictedT int64
	_, err = forEachTarget(names, func(name string) error {
		if !c.isCandidate(name) {
			return fmt.Errorf("evict hits candidates only, not %s", name)
		}
		if evictedT == 0 { // before the call: the eviction may take effect before it returns
			evictedT = history.Now()
		}
		if err := pe.EvictPod(ctx, name); err != nil {
			return err
		}
		hit = append(hit, name)
		return nil
	})
	heal := func(ctx context.Context) error {
		var errs []error
		for _, name := range hit {
			if err := c.kubeletKill(ctx, name); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	if len(hit) == 0 {
		return nil, err
	}
	return &applied{targets: names, heal: heal, beganT: evictedT}, err
}

// kubeletKill SIGKILLs an evicted candidate's process and starts it again (the harness
// gives the new process a new Pod).
func (c *containers) kubeletKill(ctx context.Context, name string) error {
	nd, err := c.node(name)
	if err != nil {
		return err
	}
	st, err := nd.State(ctx)
	if err != nil {
		return fmt.Errorf("evict heal %s: %w", name, err)
	}
	if st.Running {
		c.killing(name) // the sweep starts it again if this heal is cut short
		t, err := sigkill(ctx, nd)
		if err != nil {
			return fmt.Errorf("evict heal %s: %w", name, err)
		}
		c.record(history.Event{Source: history.SourceHarness, Kind: history.KindSignal, T: t, Node: name, Signal: "SIGKILL", Reason: "kubelet: pod no longer exists"})
		c.stoppedNow(ctx, name)
		if err := waitUntil(ctx, 10*time.Second, func() (bool, error) {
			st, err := nd.State(ctx)
			return err == nil && !st.Running, err
		}, name+" still running after SIGKILL"); err != nil {
			return err
		}
	}
	return c.restart(ctx, name)
}
