package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

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
func (n *Nemesis) sidecarFor(ctx context.Context, target string) (Sidecar, error) {
	n.mu.Lock()
	lk := n.sideLocks[target]
	if lk == nil {
		lk = &sync.Mutex{}
		n.sideLocks[target] = lk
	}
	n.mu.Unlock()
	lk.Lock()
	defer lk.Unlock()

	nd, err := n.node(target)
	if err != nil {
		return nil, err
	}
	pid, err := nd.HostPID(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s is not running, its network cannot be changed: %w", target, err)
	}
	n.mu.Lock()
	sc := n.sidecars[target]
	n.mu.Unlock()
	if sc != nil && sc.targetPID == pid {
		return sc.node, nil
	}
	if sc != nil {
		n.forgetSidecar(ctx, target)
	}
	side, err := n.env.StartSidecar(ctx, nd)
	if err != nil {
		return nil, fmt.Errorf("start tools sidecar for %s: %w", target, err)
	}
	n.mu.Lock()
	n.sidecars[target] = &sidecar{node: side, targetPID: pid}
	n.mu.Unlock()
	return side, nil
}

// forgetSidecar removes the sidecar of target (after a restart its namespace is stale).
func (n *Nemesis) forgetSidecar(ctx context.Context, target string) {
	n.mu.Lock()
	sc := n.sidecars[target]
	delete(n.sidecars, target)
	n.mu.Unlock()
	if sc == nil {
		return
	}
	if err := sc.node.Terminate(ctx); err != nil {
		// Still there: keep it where removeSidecars (HealAll's sweep) tries again, under a
		// key no live sidecar uses, instead of losing track of a running container.
		n.mu.Lock()
		n.sidecars[target+" (stale)"] = sc
		n.mu.Unlock()
	}
}

// removeSidecars terminates every sidecar this nemesis started.
func (n *Nemesis) removeSidecars(ctx context.Context) error {
	n.mu.Lock()
	all := n.sidecars
	n.sidecars = map[string]*sidecar{}
	n.mu.Unlock()
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
func (n *Nemesis) iptables(ctx context.Context, target, script string) (string, error) {
	side, err := n.sidecarFor(ctx, target)
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
func (n *Nemesis) clearNetwork(ctx context.Context, target string) error {
	nd, err := n.node(target)
	if err != nil {
		return err
	}
	if st, err := nd.State(ctx); err == nil && !st.Running {
		n.mu.Lock()
		delete(n.netNodes, target)
		n.mu.Unlock()
		return nil
	}
	out, err := n.iptables(ctx, target, HealScript())
	if err != nil {
		return fmt.Errorf("heal network of %s: %w", target, err)
	}
	if HasProjectRules(out) {
		return fmt.Errorf("heal network of %s: project rules still listed after removal:\n%s", target, out)
	}
	n.mu.Lock()
	delete(n.netNodes, target)
	n.mu.Unlock()
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
