package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// leaseStore gets the run a pooled cluster: an idle one of the same key that still answers,
// or a new entry (network only; setup launches its cluster). r.net is set either way.
func (r *run) leaseStore(ctx context.Context, pool *StorePool, kind stores.Kind, ft faketimeSetup) error {
	key := poolKey(kind, r.cfg.StoreNodes, r.cfg.Profile, r.imgs[stores.ImageRole(kind)], ft)
	if e := pool.take(key); e != nil {
		if err := stores.Healthy(ctx, e.cluster); err != nil {
			r.log.logf("store: pooled cluster %s failed its check at lease, starting a fresh one: %v", e.id, err)
			pool.discard(ctx, e)
		} else {
			r.lease = &storeLease{pool: pool, entry: e, reused: true, offsets: logOffsets(e.cluster),
				note: fmt.Sprintf("reused from run %s, %s use (pooled cluster %s, state wiped and verified)", e.lastRun, ordinal(e.uses), e.id)}
			r.net, r.cluster = e.net, e.cluster
			return nil
		}
	}
	e, err := pool.newEntry(ctx, key)
	if err != nil {
		return err
	}
	r.lease = &storeLease{pool: pool, entry: e, offsets: map[string]int64{},
		note: fmt.Sprintf("fresh, 1st use (pooled cluster %s)", e.id)}
	r.net = e.net
	return nil
}

// launchLeased starts the cluster of a fresh lease (a reused one is running already).
func (r *run) launchLeased(ctx context.Context, opts stores.Options) (stores.Cluster, error) {
	if r.lease.reused {
		return r.lease.entry.cluster, nil
	}
	if err := r.lease.pool.launch(ctx, r.lease.entry, opts); err != nil {
		return nil, err
	}
	return r.lease.entry.cluster, nil
}

// reusable reports why the leased cluster must not serve another run ("" = it may): the run
// must have healed without a harness error, and every store node must be running, not
// frozen or SIGSTOPped, without project iptables rules in its namespace, and serving.
func (r *run) reusable(ctx context.Context) string {
	if why := runBarsReuse(r.lease.entry.cluster != nil, r.finishReason, r.healErr, r.root.Err()); why != "" {
		return why
	}
	for _, n := range r.cluster.Nodes() {
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
	if err := stores.Healthy(ctx, r.cluster); err != nil {
		return "health check: " + err.Error()
	}
	if r.prep.schedule.Needs().Network {
		if err := r.storeRulesGone(ctx); err != nil {
			return err.Error()
		}
	}
	return ""
}

// storeRulesGone lists the filter table in every store node's namespace from a tools
// sidecar (labelled with the run, so the run's sweep removes it if anything goes wrong).
func (r *run) storeRulesGone(ctx context.Context) error {
	nodes := r.cluster.Nodes()
	return platform.Each(len(nodes), 0, func(i int) error {
		n := nodes[i]
		side, err := r.eng.Start(ctx, r.runID, nil, platform.NodeSpec{
			Name: "poolcheck-" + n.Name(), Role: "tools", Image: r.imgs[images.RoleTools],
			Entrypoint: []string{"sleep", "infinity"}, CapAdd: []string{"NET_ADMIN"},
			NetworkMode: "container:" + n.ID(),
		})
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

// resetLeased wipes the cluster for the next run: the faketime offset back to its initial
// value, then the store's own reset (verified).
func (r *run) resetLeased(ctx context.Context) error {
	if r.lease.entry.faketime {
		for _, n := range r.cluster.Nodes() {
			if err := n.CopyFile(ctx, nemesis.FaketimeFile, []byte(nemesis.FaketimeInitial), 0o644); err != nil {
				return fmt.Errorf("reset faketime offset of %s: %w", n.Name(), err)
			}
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return stores.Reset(rctx, r.cluster)
}

// releaseStore gives a reusable, wiped cluster back to the pool or removes it, and copies
// the run's share of the store logs into the run's logs dir. The other containers of the
// run are gone by now (a reset must not race a candidate).
func (r *run) releaseStore(ctx context.Context, why string) error {
	l := r.lease
	if why == "" {
		if err := r.resetLeased(ctx); err != nil {
			why = "reset: " + err.Error()
		}
	}
	if why == "" {
		err := l.copyRunLogs(r.log.logDir())
		l.pool.giveBack(l.entry, r.runID)
		r.log.logf("store: cluster %s checked, wiped and returned to the pool", l.entry.id)
		return err
	}
	r.log.logf("store: cluster %s is not reused (%s): removing it", l.entry.id, why)
	// Close first so the log followers flush, copy, then remove the rest (and the pool's log dir).
	var errs []error
	if l.entry.cluster != nil {
		errs = append(errs, l.entry.cluster.Close(ctx))
	}
	errs = append(errs, l.copyRunLogs(r.log.logDir()), l.pool.discard(ctx, l.entry))
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
