package nemesis

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// containers is the mechanism of the container engine: nodes frozen with the cgroup
// freezer and nodes killed and not yet started again. A start goes through restart, which
// tells the watchers (live.watchers: the network rules) before and after, so what they keep
// in a node's namespaces follows it into the new ones.
type containers struct {
	*live
	mu      sync.Mutex
	frozen  map[string]bool
	killed  map[string]bool
	started map[string]int64 // when restart last started each node
}

func newContainers(l *live) *containers { return &containers{live: l} }

func (c *containers) mark(set *map[string]bool, name string, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *set == nil {
		*set = map[string]bool{}
	}
	if on {
		(*set)[name] = true
	} else {
		delete(*set, name)
	}
}

// frozenNow records name as frozen (the sweep thaws it).
func (c *containers) frozenNow(name string) { c.mark(&c.frozen, name, true) }

// killing records name as killed before the signal is sent (the sweep starts it again).
func (c *containers) killing(name string) { c.mark(&c.killed, name, true) }

// stoppedNow tells the watchers name's namespaces are gone (after its kill took effect,
// so the kill is not delayed by their cleanup).
func (c *containers) stoppedNow(ctx context.Context, name string) {
	for _, w := range c.watchers() {
		w.nodeStopped(ctx, name)
	}
}

// thaw unfreezes name if it is paused and checks it is not any more.
func (c *containers) thaw(ctx context.Context, name string) error {
	nd, err := c.node(name)
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
	c.mark(&c.frozen, name, false)
	return nil
}

// restart starts name again if it is not running, telling the watchers before and after.
func (c *containers) restart(ctx context.Context, name string) error {
	nd, err := c.node(name)
	if err != nil {
		return err
	}
	st, err := nd.State(ctx)
	if err != nil {
		return fmt.Errorf("restart %s: %w", name, err)
	}
	if !st.Running {
		for _, w := range c.watchers() {
			w.nodeStopped(ctx, name)
			if err := w.nodeStarting(ctx, name); err != nil {
				return fmt.Errorf("restart %s: %w", name, err)
			}
		}
		if err := nd.Start(ctx); err != nil {
			return fmt.Errorf("restart %s: %w", name, err)
		}
		c.mu.Lock()
		if c.started == nil {
			c.started = map[string]int64{}
		}
		c.started[name] = history.Now()
		c.mu.Unlock()
		if st, err = nd.State(ctx); err != nil || !st.Running {
			return fmt.Errorf("restart %s: not running afterwards (%s, %v)", name, st.Status, err)
		}
		for _, w := range c.watchers() {
			if err := w.nodeStarted(ctx, name); err != nil {
				return fmt.Errorf("restart %s: %w", name, err)
			}
		}
	}
	c.mark(&c.killed, name, false)
	return nil
}

// startedAt is when restart last started name (0: never).
func (c *containers) startedAt(name string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started[name]
}

// sweep thaws every node still frozen and starts every node still killed.
func (c *containers) sweep(ctx context.Context) []error {
	c.mu.Lock()
	frozen, killed := keys(c.frozen), keys(c.killed)
	c.mu.Unlock()
	var errs []error
	for _, name := range frozen {
		if err := c.thaw(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range killed {
		if err := c.restart(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func keys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
