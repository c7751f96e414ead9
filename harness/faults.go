package harness

import (
	"context"
	"errors"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/faultproxy"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// faultEnv is the fault stage: the plan made for the real topology, the nemesis that carries
// it out (through nemesisEnv), the candidates' clock files it skews (clockdir.go), the store
// fault proxy (storeproxy.go), and the heal bookkeeping. Every fault is healed before the
// candidates stop; the proxy goes with the other containers and the clock files after them.
type faultEnv struct {
	runID   string
	store   string // the store kind (Config.Store)
	eng     *platform.Engine
	imgs    images.Set
	log     *journal
	cands   *candidateProcs
	cluster *clusterLease

	plan  nemesis.Plan
	nem   *nemesis.Nemesis // nil: the run has no faults
	clock clockDir
	// faketime: the candidates are a library's unmodified processes under libfaketime, so a
	// clock fault also writes their libfaketime file (nemesis.CandidateFaketimeEnv).
	faketime bool
	// proxyNode is the fault proxy container and proxy its links, only in runs whose plan
	// has a fault acting through it (a kind whose traits say Proxy: `splitbrain nemesis list`).
	proxyNode *platform.Node
	proxy     *faultproxy.Proxy
	healErr   error        // every heal that failed, during the faults phase or after
	fence     *fenceDevice // the candidates' fence device (fence.go)
}

// newFaultEnv holds the plan; setup gives it a nemesis when the run has faults (or a
// schedule at all).
func newFaultEnv(runID, store string, eng *platform.Engine, imgs images.Set, log *journal, cands *candidateProcs,
	cluster *clusterLease, plan nemesis.Plan) *faultEnv {
	return &faultEnv{runID: runID, store: store, eng: eng, imgs: imgs, log: log, cands: cands, cluster: cluster, plan: plan}
}

// planned is the fault plan (empty before the stage exists).
func (f *faultEnv) planned() nemesis.Plan {
	if f == nil {
		return nemesis.Plan{}
	}
	return f.plan
}

// observe lets the nemesis's event triggers see every recorded event.
func (f *faultEnv) observe(e history.Event) {
	if f.nem != nil {
		f.nem.Observe(e)
	}
}

// run carries out the plan until ctx ends. An error is a fault that could not be healed
// (the caller notes it with healFailed unless the run is ending anyway).
func (f *faultEnv) run(ctx context.Context) error {
	if f.nem == nil {
		return nil
	}
	return f.nem.Run(ctx, f.plan)
}

// healFailed notes a fault that could not be healed: the run's state is unknown.
func (f *faultEnv) healFailed(err error) { f.healErr = errors.Join(f.healErr, err) }

// heal undoes every fault (idempotent). A failure is recorded in the history and in the heal
// bookkeeping, and returned.
func (f *faultEnv) heal(ctx context.Context) error {
	if f == nil || f.nem == nil {
		return nil
	}
	err := f.nem.HealAll(ctx)
	if err != nil {
		f.healErr = errors.Join(f.healErr, err)
		f.log.harnessError(history.PhaseHeal, "heal failed: "+err.Error())
	}
	return err
}

// healError is every heal that failed, nil when none did.
func (f *faultEnv) healError() error {
	if f == nil {
		return nil
	}
	return f.healErr
}

// proxyEndpoints are candidate's links through the fault proxy, nil when it connects to the
// store directly.
func (f *faultEnv) proxyEndpoints(candidate string) []string {
	if f == nil || f.proxy == nil {
		return nil
	}
	return f.proxy.Endpoints(candidate)
}

// clockHostDir is the host directory mounted as candidate's clock file directory, "" when
// the clock file is copied in instead.
func (f *faultEnv) clockHostDir(candidate string) string {
	if f == nil {
		return ""
	}
	return f.clock.hostDir(candidate)
}

// removeClockDir removes the clock files once no container mounts them.
func (f *faultEnv) removeClockDir() {
	if f == nil {
		return
	}
	if err := f.clock.remove(); err != nil {
		f.log.logf("remove candidate clock directory: %v", err)
	}
}
