package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// liveRuns are this process's runs from their start to their end, so that the first Ctrl-C
// prints one cleanup hint for every run it interrupts: with runs at once on shared pools
// (assess and matrix --parallel) each run's own hint named only itself, and following the
// last one printed left the other runs' containers, and a pool network they were attached
// to, behind.
type liveRuns struct {
	mu   sync.Mutex
	runs []*liveRun
}

type liveRun struct {
	id     string
	ctx    context.Context
	pool   *StorePool
	hinted bool // a hint named it already
}

// live is the process's registry (Run adds and removes its run).
var live liveRuns

func (l *liveRuns) add(ctx context.Context, id string, pool *StorePool) *liveRun {
	r := &liveRun{id: id, ctx: ctx, pool: pool}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, r)
	return r
}

func (l *liveRuns) remove(r *liveRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = slices.DeleteFunc(l.runs, func(o *liveRun) bool { return o == r })
}

// hint is what r's ended context prints: one hint naming every live run whose context has
// ended too (r among them), then the pools they lease from; "" when an earlier hint named r.
// The runs come first in the cleanup command: a pool's network cannot be removed while a
// run's containers are attached to it.
func (l *liveRuns) hint(r *liveRun) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.hinted {
		return ""
	}
	var ids, pools []string
	for _, o := range l.runs {
		if o.hinted || o.ctx.Err() == nil {
			continue
		}
		o.hinted = true
		ids = append(ids, o.id)
		for _, p := range o.pool.IDs() {
			if !slices.Contains(pools, p) {
				pools = append(pools, p)
			}
		}
	}
	slices.Sort(pools)
	return interruptHint(context.Cause(r.ctx), ids, pools)
}

// interruptHint is what the first Ctrl-C prints: what happens now, what a second one does,
// and the commands that clean up after it: the runs' own objects first, then the pooled
// store clusters, whose containers and network carry the pool entries' ids.
func interruptHint(cause error, runIDs, poolIDs []string) string {
	var cleanup []string
	for _, id := range append(slices.Clone(runIDs), poolIDs...) {
		cleanup = append(cleanup, "splitbrain clean --run "+id)
	}
	what := "run " + strings.Join(runIDs, "")
	if len(runIDs) > 1 {
		what = "runs " + strings.Join(runIDs, ", ")
	}
	return fmt.Sprintf("splitbrain: %v: healing faults and removing %s; a second Ctrl-C stops at once and skips cleanup (then remove what is left with: %s)",
		cause, what, strings.Join(cleanup, " && "))
}
