package harness

import (
	"context"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// run is one run in progress: its configuration and the stages that lifecycle composes.
// A stage is nil until the lifecycle reaches it; finish tears down those that started.
type run struct {
	cfg   Config
	prep  prepared
	runID string
	// root is the caller's context: when it ends the run heals and tears down.
	root context.Context

	log   *journal    // the recorder stage: history, live state, harness log, phases
	watch *watchState // the engine's container events, from before anything starts
	eng   *platform.Engine
	imgs  images.Set

	cluster  *clusterLease   // network and store cluster, pooled or the run's own
	resource *resourceStage  // the resource the candidates write to: a container or a server here
	faults   *faultEnv       // plan, nemesis, clock files, store proxy, heal bookkeeping
	cands    *candidateProcs // the candidates' processes (and Pods)
	goals    *phaseGoals     // what each phase waits for in an event-ended run (Config.Until); nil = time-ended
	cmdDir   string          // host directory of the --candidate-cmd executable the candidates mount; "" = none
	binDir   string          // host directory of the static splitbrain binary external candidates mount; "" = none

	finishReason string // why the run ended early ("" = it completed)
	finished     bool   // finish ran (it must run exactly once, also when a panic follows it)
	leftover     string // Docker objects teardown could not remove
}
