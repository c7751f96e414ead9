package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// netRules is the mechanism of iptables rules: it places them from a tools sidecar in each
// target's network namespace, keeps the active cuts (netcuts.go) so a restarted node gets
// its rules back, and remembers every node that ever got rules, which its sweep clears
// before it removes the sidecars.
type netRules struct {
	*live
	mu        sync.Mutex
	sidecars  map[string]*sidecar    // by target node name
	sideLocks map[string]*sync.Mutex // by target: two faults never race to create one sidecar
	touched   nameSet                // nodes that ever got rules
	cuts      netCuts
}

func newNetRules(l *live) *netRules { return &netRules{live: l} }

// sweep clears the project's rules from every node that got some, then removes the
// sidecars.
func (r *netRules) sweep(ctx context.Context) []error {
	nodes := r.touched.list()
	var errs []error
	for _, name := range nodes {
		if err := r.clearNetwork(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.removeSidecars(ctx); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// prewarm starts, in the background, the sidecars of every node, so a partition takes
// effect close to its planned time instead of after a container start (about 1 s here).
// Failures are ignored: sidecarFor tries again when the fault starts. inflight counts the
// starts so the nemesis's heal waits for them and removes what they started. A start that
// has begun is not cancelled with the run's ctx: the heal waits for it anyway, and a
// finished start is a sidecar the sweep knows (TestChaosRedisFaults/one-way once found
// nemesis-redis left after its heal when a cancelled create lost its answer; the platform
// now lets every create finish, platform.Engine.Start).
func (r *netRules) prewarm(ctx context.Context, inflight *sync.WaitGroup, closing func() bool) {
	names := append(slices.Clone(r.topo.Candidates), r.topo.StoreNodes...)
	sem := make(chan struct{}, 3) // 2 cores shared with the run: a few at a time
	for _, name := range names {
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil || closing() {
				return
			}
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), applyTimeout)
			defer cancel()
			_, _ = r.sidecarFor(pctx, name)
		}()
	}
}

// nodeStopped drops the sidecar of a node whose namespace went with it.
func (r *netRules) nodeStopped(ctx context.Context, node string) { r.forgetSidecar(ctx, node) }

// sidecar is a tools container sharing one target's network namespace
// (NetworkMode container:<id>) with NET_ADMIN, never privileged. It works on FROM-scratch
// and distroless targets (no iptables inside them) and on frozen ones. A target restart
// gives the target a new namespace, so a sidecar is bound to the target's host PID.
type sidecar struct {
	node      Sidecar
	targetPID int
}

// SidecarName is the node name of the sidecar for target.
func SidecarName(target string) string { return "nemesis-" + target }

// sidecarFor returns a live sidecar in target's current network namespace.
func (r *netRules) sidecarFor(ctx context.Context, target string) (Sidecar, error) {
	r.mu.Lock()
	if r.sideLocks == nil {
		r.sideLocks = map[string]*sync.Mutex{}
	}
	if r.sidecars == nil {
		r.sidecars = map[string]*sidecar{}
	}
	lk := r.sideLocks[target]
	if lk == nil {
		lk = &sync.Mutex{}
		r.sideLocks[target] = lk
	}
	r.mu.Unlock()
	lk.Lock()
	defer lk.Unlock()

	nd, err := r.node(target)
	if err != nil {
		return nil, err
	}
	pid, err := nd.HostPID(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s is not running, its network cannot be changed: %w", target, err)
	}
	r.mu.Lock()
	sc := r.sidecars[target]
	r.mu.Unlock()
	if sc != nil && sc.targetPID == pid {
		return sc.node, nil
	}
	if sc != nil {
		r.forgetSidecar(ctx, target)
	}
	side, err := r.env.StartSidecar(ctx, nd)
	if err != nil {
		return nil, fmt.Errorf("start tools sidecar for %s: %w", target, err)
	}
	r.mu.Lock()
	r.sidecars[target] = &sidecar{node: side, targetPID: pid}
	r.mu.Unlock()
	return side, nil
}

// forgetSidecar removes the sidecar of target (after a restart its namespace is stale).
func (r *netRules) forgetSidecar(ctx context.Context, target string) {
	r.mu.Lock()
	sc := r.sidecars[target]
	delete(r.sidecars, target)
	r.mu.Unlock()
	if sc == nil {
		return
	}
	if err := sc.node.Terminate(ctx); err != nil {
		// Still there: keep it where removeSidecars (HealAll's sweep) tries again, under a
		// key no live sidecar uses, instead of losing track of a running container.
		r.mu.Lock()
		r.sidecars[target+" (stale)"] = sc
		r.mu.Unlock()
	}
}

// removeSidecars terminates every sidecar this nemesis started.
func (r *netRules) removeSidecars(ctx context.Context) error {
	r.mu.Lock()
	all := r.sidecars
	r.sidecars = map[string]*sidecar{}
	r.mu.Unlock()
	var errs []error
	for name, sc := range all {
		if err := sc.node.Terminate(ctx); err != nil {
			errs = append(errs, fmt.Errorf("remove sidecar of %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// iptables runs a script in target's namespace and returns its output (the final
// `iptables -S` listing of the scripts in iptables.go).
func (r *netRules) iptables(ctx context.Context, target, script string) (string, error) {
	side, err := r.sidecarFor(ctx, target)
	if err != nil {
		return "", err
	}
	code, out, err := side.Exec(ctx, []string{"sh", "-c", script})
	if err != nil {
		return out, fmt.Errorf("iptables in %s: %w", target, err)
	}
	if code != 0 {
		return out, fmt.Errorf("iptables in %s exited %d: %s", target, code, strings.TrimSpace(tail(out, 400)))
	}
	return out, nil
}

// clearNetwork removes the project's chains from target's namespace and verifies the
// listing. A node that is not running has no namespace left to clear.
func (r *netRules) clearNetwork(ctx context.Context, target string) error {
	nd, err := r.node(target)
	if err != nil {
		return err
	}
	if st, err := nd.State(ctx); err == nil && !st.Running {
		r.touched.remove(target)
		return nil
	}
	out, err := r.iptables(ctx, target, HealScript())
	if err != nil {
		return fmt.Errorf("heal network of %s: %w", target, err)
	}
	if HasProjectRules(out) {
		return fmt.Errorf("heal network of %s: project rules still listed after removal:\n%s", target, out)
	}
	r.touched.remove(target)
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
