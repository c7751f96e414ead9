package nemesis

import (
	"context"
	"fmt"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// containers is the mechanism of the container engine: nodes frozen with the cgroup
// freezer and nodes killed and not yet started again. A start goes through restart, which
// tells the watchers (live.watchers: the network rules) before and after, so what they keep
// in a node's namespaces follows it into the new ones.
type containers struct {
	*live
	frozen, killed nameSet
	mu             sync.Mutex
	started        map[string]int64 // when restart last started each node
}

func newContainers(l *live) *containers { return &containers{live: l} }

// frozenNow records name as frozen (the sweep thaws it).
func (c *containers) frozenNow(name string) { c.frozen.add(name) }

// killing records name as killed before the signal is sent (the sweep starts it again).
func (c *containers) killing(name string) { c.killed.add(name) }

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
	c.frozen.remove(name)
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
	c.killed.remove(name)
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
	frozen, killed := c.frozen.list(), c.killed.list()
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

// nameSet is a set of names under its own lock: what a mechanism changed and must undo.
type nameSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *nameSet) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]bool{}
	}
	s.m[name] = true
}

func (s *nameSet) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, name)
}

// list is the names, sorted.
func (s *nameSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.m)
}
