package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// clusterLease is the cluster stage: the run's network and store cluster, leased from the
// suite's pool (Config.StorePool) or owned by the run. It is released last at teardown,
// once no candidate can reach it: a pooled cluster is checked, wiped and given back, or
// removed.
type clusterLease struct {
	eng   *platform.Engine
	runID string
	log   *journal
	tools string // the tools image, for the reuse check's iptables sidecars
	// checkRules: the schedule has network faults, so a pooled cluster must show no project
	// iptables rules before it serves another run.
	checkRules bool

	net   *platform.Network
	store stores.Cluster // nil in a store-less run, and until launched
	// lease is the pooled store cluster (Config.StorePool); nil = the run owns its cluster.
	lease       *storeLease
	whyNotReuse string // checkReuse's finding, acted on by release
}

func newClusterLease(eng *platform.Engine, runID string, log *journal, tools string, checkRules bool) *clusterLease {
	return &clusterLease{eng: eng, runID: runID, log: log, tools: tools, checkRules: checkRules}
}

// storeCluster is the store cluster, nil when there is none (yet).
func (c *clusterLease) storeCluster() stores.Cluster {
	if c == nil {
		return nil
	}
	return c.store
}

// network is the run network, nil before setup made it.
func (c *clusterLease) network() *platform.Network {
	if c == nil {
		return nil
	}
	return c.net
}

// reuseNote says where the store came from ("" = the run's own cluster).
func (c *clusterLease) reuseNote() string {
	if c == nil || c.lease == nil {
		return ""
	}
	return c.lease.note
}

// poolRunID is the run id a pooled cluster's containers carry ("" = not pooled).
func (c *clusterLease) poolRunID() string {
	if c.lease == nil {
		return ""
	}
	return c.lease.entry.id
}

// acquire gets the run its network: a new one, or a pooled cluster's, which may run
// already (an idle one of the same key that still answers).
func (c *clusterLease) acquire(ctx context.Context, pool *StorePool, key string) error {
	if pool == nil {
		var err error
		c.net, err = c.eng.NewNetwork(ctx, c.runID)
		return err
	}
	if e := pool.take(key); e != nil {
		if err := stores.Healthy(ctx, e.cluster); err != nil {
			c.log.logf("store: pooled cluster %s failed its check at lease, starting a fresh one: %v", e.id, err)
			pool.discard(ctx, e)
		} else {
			c.lease = &storeLease{pool: pool, entry: e, reused: true, offsets: logOffsets(e.cluster),
				note: fmt.Sprintf("reused from run %s, %s use (pooled cluster %s, state wiped and verified)", e.lastRun, ordinal(e.uses), e.id)}
			c.net, c.store = e.net, e.cluster
			return nil
		}
	}
	e, err := pool.newEntry(ctx, key)
	if err != nil {
		return err
	}
	c.lease = &storeLease{pool: pool, entry: e, offsets: map[string]int64{},
		note: fmt.Sprintf("fresh, 1st use (pooled cluster %s)", e.id)}
	c.net = e.net
	return nil
}

// launch starts the store cluster on the network, unless the lease brought a running one.
func (c *clusterLease) launch(ctx context.Context, opts stores.Options) error {
	var err error
	switch {
	case c.lease == nil:
		c.store, err = stores.Launch(ctx, c.eng, c.net, c.runID, opts)
	case !c.lease.reused:
		if err = c.lease.pool.launch(ctx, c.lease.entry, opts); err == nil {
			c.store = c.lease.entry.cluster
		}
	}
	return err
}

// runEnd is what the run says about how it ended, which bars a pooled cluster's reuse.
type runEnd struct {
	reason           string // finish's reason, "" = the run completed
	healErr, stopped error  // a failed heal; the caller's context ended
}

// checkReuse runs while the run's other containers are removed: a pooled cluster is checked
// for reuse (release acts on the finding), a cluster of the run's own is removed.
func (c *clusterLease) checkReuse(ctx context.Context, end runEnd) error {
	switch {
	case c.lease != nil:
		c.whyNotReuse = c.reusable(ctx, end)
	case c.store != nil:
		return c.store.Close(ctx)
	}
	return nil
}

// release gives a pooled cluster back (or removes it), or removes the run's own network; it
// runs after checkReuse, when every other container of the run is gone.
func (c *clusterLease) release(ctx context.Context) error {
	switch {
	case c.lease != nil:
		return c.releaseStore(ctx, c.whyNotReuse)
	case c.net != nil:
		return c.net.Remove(ctx)
	}
	return nil
}

// reusable reports why the leased cluster must not serve another run ("" = it may): the run
// must have healed without a harness error, and every store node must be running, not
// frozen or SIGSTOPped, without project iptables rules in its namespace, and serving.
func (c *clusterLease) reusable(ctx context.Context, end runEnd) string {
	if why := runBarsReuse(c.lease.entry.cluster != nil, end.reason, end.healErr, end.stopped); why != "" {
		return why
	}
	for _, n := range c.store.Nodes() {
		pid, err := n.HostPID(ctx)
		if err != nil {
			return fmt.Sprintf("%s is not running: %v", n.Name(), err)
		}
		stopped, err := stoppedProcesses(pid)
		if err != nil {
			return fmt.Sprintf("%s: reading host processes: %v", n.Name(), err)
		}
		if len(stopped) > 0 {
			return fmt.Sprintf("%s: processes %v are stopped (SIGSTOP)", n.Name(), stopped)
		}
	}
	if err := stores.Healthy(ctx, c.store); err != nil {
		return "health check: " + err.Error()
	}
	if c.checkRules {
		if err := c.storeRulesGone(ctx); err != nil {
			return err.Error()
		}
	}
	return ""
}

// storeRulesGone lists the filter table in every store node's namespace, from the host
// where it can (platform.HostNetnsUsable), else from a tools sidecar (labelled with the
// run, so the run's sweep removes it if anything goes wrong).
func (c *clusterLease) storeRulesGone(ctx context.Context) error {
	nodes := c.store.Nodes()
	return platform.Each(len(nodes), 0, func(i int) error {
		n := nodes[i]
		side, err := c.netnsOf(ctx, n)
		if err != nil {
			return fmt.Errorf("iptables check of %s: %w", n.Name(), err)
		}
		defer side.Terminate(ctx)
		code, out, err := side.Exec(ctx, []string{"iptables", "-w", "5", "-S"})
		switch {
		case err != nil || code != 0:
			return fmt.Errorf("iptables check of %s: exit %d, %v: %s", n.Name(), code, err, strings.TrimSpace(out))
		case nemesis.HasProjectRules(out):
			return fmt.Errorf("%s still has project iptables rules:\n%s", n.Name(), out)
		}
		return nil
	})
}

// netnsOf enters n's network namespace from the host, or starts a tools sidecar in it.
func (c *clusterLease) netnsOf(ctx context.Context, n *platform.Node) (nemesis.Sidecar, error) {
	if h := hostNetns(ctx, n); h != nil {
		return h, nil
	}
	return c.eng.Start(ctx, c.runID, nil, platform.NodeSpec{
		Name: "poolcheck-" + n.Name(), Role: "tools", Image: c.tools,
		Entrypoint: []string{"sleep", "infinity"}, CapAdd: []string{"NET_ADMIN"},
		NetworkMode: "container:" + n.ID(),
	})
}

// resetLeased wipes the cluster for the next run: the faketime offset back to its initial
// value, then the store's own reset (verified).
func (c *clusterLease) resetLeased(ctx context.Context) error {
	if c.lease.entry.faketime {
		for _, n := range c.store.Nodes() {
			if err := n.CopyFile(ctx, nemesis.FaketimeFile, []byte(nemesis.FaketimeInitial), 0o644); err != nil {
				return fmt.Errorf("reset faketime offset of %s: %w", n.Name(), err)
			}
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return stores.Reset(rctx, c.store)
}

// releaseStore gives a reusable, wiped cluster back to the pool or removes it, and copies
// the run's share of the store logs into the run's logs dir. The other containers of the
// run are gone by now (a reset must not race a candidate).
func (c *clusterLease) releaseStore(ctx context.Context, why string) error {
	l := c.lease
	if why == "" {
		if err := c.resetLeased(ctx); err != nil {
			why = "reset: " + err.Error()
		}
	}
	if why == "" {
		err := l.copyRunLogs(c.log.logDir())
		l.pool.giveBack(l.entry, c.runID)
		c.log.logf("store: cluster %s checked, wiped and returned to the pool", l.entry.id)
		return err
	}
	c.log.logf("store: cluster %s is not reused (%s): removing it", l.entry.id, why)
	// Close first so the log followers flush, copy, then remove the rest (and the pool's log dir).
	var errs []error
	if l.entry.cluster != nil {
		errs = append(errs, l.entry.cluster.Close(ctx))
	}
	errs = append(errs, l.copyRunLogs(c.log.logDir()), l.pool.discard(ctx, l.entry))
	return errors.Join(errs...)
}

// runBarsReuse is the part of the decision that needs no Docker: what the run itself says.
func runBarsReuse(started bool, finishReason string, healErr, cancelled error) string {
	switch {
	case !started:
		return "the cluster never started"
	case finishReason != "":
		return "the run ended early: " + finishReason
	case healErr != nil:
		return "heal failed: " + healErr.Error()
	case cancelled != nil:
		return "the run was cancelled"
	}
	return ""
}
