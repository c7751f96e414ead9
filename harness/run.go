package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// Bounds of the lifecycle's own work.
const (
	// teardownTimeout bounds heal + teardown, which run on a context that survives
	// cancellation (SIGINT, go test deadline) so nothing is left behind.
	teardownTimeout = 2 * time.Minute
	// startupWindow: candidates that all exit within this time after start are broken
	// (missing command, bad environment); the run stops with their log tails.
	startupWindow = 5 * time.Second
	// candidateStartBound: how long the warmup waits for every candidate's first
	// campaigning before it starts counting anyway (awaitCampaigning). The wait ends on the
	// event; the bound only stops waiting for a candidate that never prints it. At 60 s a
	// JVM candidate at load 49 campaigned 65 s in, after the faults had begun, and the
	// CURATOR-696 row missed its second leader (2026-11-28).
	candidateStartBound = 3 * time.Minute
)

// Run executes one chaos run end to end and returns its outcome: Prepare, then
// Prepared.Run.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	p, err := Prepare(cfg)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx)
}

// Prepared is a configuration checked once: validated with its defaults filled in, the
// recipe, schedule, workload and goal resolved, and the fault schedule planned on the run's
// nominal topology (the plan the run carries out when its real nodes have those names, as
// they do). A command checks its flags with Prepare and runs the result, so nothing is
// validated or planned twice.
type Prepared struct {
	cfg  Config
	prep prepared
}

// Prepare validates cfg and resolves and plans it, reporting every problem at once.
func Prepare(cfg Config) (*Prepared, error) {
	prep, err := prepareConfig(&cfg)
	if err != nil {
		return nil, err
	}
	return &Prepared{cfg: cfg, prep: prep}, nil
}

// Config is the prepared configuration, defaults filled in (a seed drawn from the clock
// included).
func (p *Prepared) Config() Config { return p.cfg }

// Run executes the prepared run end to end and returns its outcome. Whatever happens
// (error, panic, ctx cancelled by SIGINT or a test deadline) every fault is healed and every
// container and the network of the run are removed before Run returns (or re-panics). A
// harness failure returns an error; the Outcome is then still filled as far as it got. A
// Prepared runs once.
func (p *Prepared) Run(ctx context.Context) (out *Outcome, err error) {
	cfg := p.cfg
	r := &run{cfg: cfg, prep: p.prep, root: ctx, runID: platform.NewRunID()}
	if cfg.Started != nil {
		cfg.Started(r.runID)
	}
	if r.log, err = openJournal(cfg, time.Now()); err != nil {
		return nil, err
	}
	defer r.log.closeLog()
	r.watch = newWatch(r.runID, r.log)
	r.cands = newCandidateProcs(r.runID, ctx, r.log, r.watch)
	r.watch.candidateDied = r.cands.died
	r.log.rec.beforeEvent = r.cands.beforeEvent
	r.log.record(history.Event{Source: history.SourceHarness, Kind: history.KindRunStart, Spec: r.summary()})
	if err := r.writeConfig(); err != nil {
		r.log.w.Close()
		return nil, err
	}

	// After the first Ctrl-C, say what a second one does and how to clean up after it: one
	// hint for every run of the process it interrupts.
	lr := live.add(ctx, r.runID, r.cfg.StorePool)
	defer live.remove(lr)
	stopHint := context.AfterFunc(ctx, func() {
		if h := live.hint(lr); h != "" {
			fmt.Fprintln(os.Stderr, h)
		}
	})
	defer stopHint()
	progressDone := r.log.startProgress(cfg.TotalTime())
	defer func() {
		if p := recover(); p != nil {
			// Heal and tear down first: a panic must not leave containers or faults behind.
			r.finish(fmt.Sprintf("panic: %v", p))
			progressDone()
			panic(p)
		}
	}()
	runErr := r.lifecycle(ctx)
	reason := ""
	switch {
	case runErr != nil && ctx.Err() != nil:
		reason = "cancelled: " + context.Cause(ctx).Error()
	case runErr != nil:
		reason = runErr.Error()
	}
	r.finish(reason)
	progressDone()
	out = r.outcome()
	checkErr := conclude(ctx, out)
	r.log.printSummary(out)
	if runErr != nil {
		return out, runErr
	}
	if ctx.Err() != nil {
		// Interrupted during teardown: finish recorded it, and the run ends like any
		// interrupted run (docs/running.md: exit 255).
		return out, fmt.Errorf("cancelled during teardown: %w", context.Cause(ctx))
	}
	return out, checkErr
}

// outcome is what the run knows of itself once finished; conclude adds the verdict.
func (r *run) outcome() *Outcome {
	out := &Outcome{
		Verdict: VerdictUnknown, RunDir: r.log.dir, RunID: r.runID, Counts: r.log.state.Snapshot().Counts,
		Elapsed: time.Since(r.log.started), Leftovers: r.leftover, StoreReuse: r.cluster.reuseNote(),
	}
	if store := r.cluster.storeCluster(); store != nil {
		out.StoreVersion = store.Version()
		for _, n := range store.Nodes() {
			out.StoreContainers = append(out.StoreContainers, n.ID())
		}
	}
	if err := r.faults.healError(); err != nil {
		out.HealError = err.Error()
	}
	return out
}

// CheckConfig validates cfg (filling in defaults) and resolves the recipe, the nemesis
// schedule and the workload, without starting anything: the errors of a bad command line.
// Every problem is reported at once.
func CheckConfig(cfg *Config) error {
	_, err := prepareConfig(cfg)
	return err
}

// prepareConfig validates cfg, filling in its defaults, and prepares it.
func prepareConfig(cfg *Config) (prepared, error) {
	verr := cfg.Validate()
	if verr != nil && !slices.Contains(storeKinds, cfg.Store) {
		// Without a known store the recipe can only be looked up by name.
		saved := cfg.Recipe
		cfg.Recipe = ""
		_, perr := prepare(cfg)
		cfg.Recipe = saved
		if saved != "" {
			if _, err := candidates.Registry.Lookup(saved); err != nil {
				perr = errors.Join(err, perr)
			}
		}
		return prepared{}, errors.Join(verr, perr)
	}
	p, perr := prepare(cfg)
	return p, errors.Join(verr, perr)
}

// summary is the run-start event's one-line description.
func (r *run) summary() string {
	c := r.cfg
	cand := "recipe=" + c.Recipe
	if c.CandidateCmd != "" {
		cand = "candidate-cmd=" + c.CandidateCmd
	} else if c.CandidateImage != "" {
		cand = "candidate-image=" + c.CandidateImage
	}
	return fmt.Sprintf("store=%s %s nodes=%d ttl=%v write-interval=%v workload=%s resource=%s nemesis=%s seed=%d time=%v warmup=%v recovery=%v",
		c.Store, cand, c.Nodes, c.TTL, c.WriteInterval, c.Workload, c.ResourceMode, c.Nemesis, c.Seed, c.FaultTime, c.Warmup, c.Recovery)
}

// lifecycle composes the run's stages in order. Setup starts them: the engine and its event
// watch, the images, the cluster (network and store; the resource beside it), the faults
// (the plan for the real topology, clock files, store proxy), the candidates. Then the timed
// phases: warmup, faults, heal, recovery. Teardown is finish's, on every exit path.
func (r *run) lifecycle(ctx context.Context) error {
	setupFailed := func(err error) error { return fmt.Errorf("setup: %w", err) }
	r.log.phase(history.PhaseSetup)
	if err := r.connect(ctx); err != nil {
		return setupFailed(err)
	}
	ext, kind, err := r.provideImages(ctx)
	if err != nil {
		return setupFailed(err)
	}
	if err := r.startCluster(ctx, kind); err != nil {
		return setupFailed(err)
	}
	if err := r.startFaults(ctx); err != nil {
		return setupFailed(err)
	}
	if err := r.startCandidates(ctx, ext); err != nil {
		return setupFailed(err)
	}
	if err := r.writeConfig(); err != nil { // again, with images, versions and the plan
		return setupFailed(err)
	}
	r.log.phase(history.PhaseWarmup)
	if err := r.warmup(ctx); err != nil {
		return err
	}
	r.log.phase(history.PhaseFaults)
	if err := r.faultsPhase(ctx); err != nil {
		return err
	}
	r.log.phase(history.PhaseHeal)
	if err := r.faults.heal(ctx); err != nil {
		// Loud, recorded (faultEnv.heal), and the run goes on to teardown.
		r.log.loud("splitbrain: HEAL FAILED: %v\n", err)
		return fmt.Errorf("heal failed: %w", err)
	}
	if err := r.cands.ensureRunning(ctx); err != nil {
		return err
	}
	r.log.phase(history.PhaseRecovery)
	return r.goals.wait(ctx, r.cfg.Recovery)
}

// finish tears down every stage that started, in reverse order, on every exit path: faults
// healed (again, idempotently, when the lifecycle did not reach its heal), the candidates
// stopped, every container removed and the cluster released (teardown), the clock files and
// the candidate executable removed, and the journal closed with run-end. It never uses a
// cancelled context.
func (r *run) finish(reason string) {
	if r.finished {
		return
	}
	r.finished = true
	r.finishReason = reason
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.root), teardownTimeout)
	defer cancel()
	if reason != "" {
		// Not reached the heal phase in order: heal now.
		r.log.phase(history.PhaseHeal)
		if err := r.faults.heal(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "splitbrain: HEAL FAILED: %v\n", err)
		}
	}
	r.log.phase(history.PhaseTeardown)
	r.teardown(ctx)
	r.faults.removeClockDir()
	if err := removeCmdDir(r.cmdDir); err != nil {
		r.log.logf("remove candidate executable directory: %v", err)
	}
	if reason == "" && r.root.Err() != nil {
		// A signal during teardown: teardown still finished, but the run was interrupted.
		reason = "cancelled during teardown: " + context.Cause(r.root).Error()
		r.finishReason = reason
	}
	r.log.close(reason)
}

// panicError is a panic in one of the run's goroutines, caught so the run can still heal.
type panicError struct {
	where string
	value any
}

func (p *panicError) Error() string { return fmt.Sprintf("panic in %s: %v", p.where, p.value) }

func catchPanic(where string, err *error) {
	if v := recover(); v != nil {
		*err = &panicError{where, v}
	}
}

// warmup lets the candidates elect a leader without faults. During its first seconds it
// watches for candidates that all die at once: a broken command or environment.
func (r *run) warmup(ctx context.Context) error {
	started := time.Now()
	if err := r.awaitCampaigning(ctx); err != nil {
		return err
	}
	warmup := warmupWait(r.cfg.Warmup, r.prep.recipe.Timing, r.goals != nil)
	end := time.Now().Add(warmup)
	check := started.Add(min(startupWindow, warmup))
	var working <-chan struct{}
	if r.goals != nil {
		working = r.goals.leaderWorking() // accepted writes show the candidates work: no need to wait out the check
	}
	for time.Now().Before(check) {
		select {
		case <-working:
			return nil
		default:
		}
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return err
		}
		if r.cands.allExited(ctx) {
			return fmt.Errorf("every candidate exited right after start: the candidate command is broken or rejects its environment.\n%s", r.cands.logTails(15))
		}
	}
	return r.goals.wait(ctx, time.Until(end))
}

// warmupWait is how long the warmup waits: its length, or in an event-ended run, which ends
// the warmup once a leader's writes are accepted, up to the recipe's start bound when that is
// longer (a Pacemaker cluster's first leader comes 31-47 s after the start: a 3 s warmup
// left assess's explore tries a faults phase that ended before any leader, nothing faulted).
func warmupWait(warmup time.Duration, t runtime.Timing, eventEnded bool) time.Duration {
	if eventEnded && t.StartBound > warmup {
		return t.StartBound
	}
	return warmup
}

// awaitCampaigning holds the warmup until every candidate has printed campaigning, for at
// most candidateStartBound: the warmup then counts from there, so a runtime that takes
// seconds to start (a JVM compiling its adapter: 4-8 s measured) still gets the whole
// warmup to elect, and the faults phase never opens before every candidate takes part.
func (r *run) awaitCampaigning(ctx context.Context) error {
	names := r.cfg.candidateNames()
	started := time.Now()
	for i := 1; !r.log.state.Campaigned(names); i++ {
		if time.Since(started) > candidateStartBound {
			r.log.logf("warmup: not every candidate printed campaigning within %v; the warmup starts anyway", candidateStartBound)
			return nil
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
		if i%5 == 0 && r.cands.allExited(ctx) { // an engine call: every 250 ms
			return fmt.Errorf("every candidate exited before all of them campaigned: the candidate command is broken or rejects its environment.\n%s", r.cands.logTails(15))
		}
	}
	if d := time.Since(started); d > time.Second {
		r.log.logf("warmup: every candidate campaigning %v after the warmup began; the warmup counts from there", d.Round(time.Millisecond))
	}
	return nil
}

// faultsPhase runs the nemesis plan and the workload for the faults phase.
func (r *run) faultsPhase(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(ctx, r.cfg.FaultTime)
	defer cancel()
	var wg sync.WaitGroup
	var nemErr, wlErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer catchPanic("nemesis", &nemErr)
		nemErr = r.faults.run(fctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer catchPanic("workload", &wlErr)
		wlErr = r.prep.workload.Run(fctx, workloadEnv{r.cands, r.log.state})
	}()
	var goalMet <-chan struct{}
	if r.goals != nil {
		goalMet = r.goals.faultsOK
	}
	select {
	case <-fctx.Done():
		if r.goals != nil && ctx.Err() == nil {
			r.log.logf("the faults phase timed out after %v before its goal: %s (the run is unknown)", r.cfg.FaultTime, r.goals.missing())
		}
	case <-goalMet:
		took := time.Since(r.log.phaseStarted()).Round(time.Millisecond)
		if failed := r.goals.failed(); len(failed) > 0 {
			r.log.logf("the faults phase ended after %v: %s, so its goal cannot be met (the run is unknown)", took, strings.Join(failed, "; "))
		} else if r.goals.stalled() {
			r.log.logf("the faults phase stalled after %v: no fault started or ended for %v, and %s (the triggers left wait on events that did not come; the run is unknown)", took, r.goals.goal.Stall, r.goals.missing())
		} else {
			r.log.logf("the faults phase met its goal (%s) after %v", r.goals.goal, took)
		}
		cancel()
	}
	wg.Wait()
	var pe *panicError
	if errors.As(nemErr, &pe) || errors.As(wlErr, &pe) {
		return pe // heal and teardown follow in finish, as for any error
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if nemErr != nil {
		// A fault that could not be healed leaves the run in an unknown state.
		r.faults.healFailed(nemErr)
		r.log.logf("HEAL FAILED during the faults phase: %v", nemErr)
	}
	if wlErr != nil {
		r.log.logf("workload %s: %v", r.cfg.Workload, wlErr)
	}
	return nil
}

// teardown stops the candidates gracefully (recording their exits), then removes every
// container and the network; a sweep by run id catches whatever is left.
func (r *run) teardown(ctx context.Context) {
	if r.eng == nil {
		return
	}
	r.watch.setLive(false) // teardown stops and removes everything on purpose
	if r.faults != nil {
		r.faults.fence.close()
	}
	t0 := time.Now()
	r.cands.stop(ctx, r.log.state.Leaders())
	tStopped := time.Now()
	// Remove every container at once; the network goes after them.
	var wg sync.WaitGroup
	var emu sync.Mutex
	var errs []error
	remove := func(f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}()
	}
	for _, n := range r.cands.containers() {
		remove(n.Terminate)
	}
	if r.resource != nil {
		remove(func(ctx context.Context) error { return r.resource.stop(ctx, r.log) })
	}
	remove(r.faults.removeProxy)
	// A leased cluster is checked while the rest goes; it is wiped (or removed) after, when
	// no candidate can reach it any more.
	if r.cluster != nil {
		end := runEnd{reason: r.finishReason, healErr: r.faults.healError(), stopped: r.root.Err()}
		remove(func(ctx context.Context) error { return r.cluster.checkReuse(ctx, end) })
	}
	wg.Wait()
	tRemoved := time.Now()
	if r.cluster != nil {
		if err := r.cluster.release(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	tStore := time.Now()
	// Last resort: anything labelled with this run (nemesis sidecars, half-started nodes).
	if rep, err := r.eng.Sweep(ctx, platform.SweepFilter{RunID: r.runID}); err != nil {
		errs = append(errs, err)
	} else if !rep.Empty() {
		r.log.logf("sweep removed leftovers of run %s: containers %v networks %v", r.runID, rep.Containers, rep.Networks)
	}
	if left, err := r.eng.Leftovers(ctx, r.runID); err == nil && !left.Empty() {
		r.leftover = left.String()
		r.log.harnessError(history.PhaseTeardown, fmt.Sprintf("left Docker objects of run %s behind: %s", r.runID, left))
		fmt.Fprintf(os.Stderr, "splitbrain: teardown left Docker objects of run %s behind: %s (remove with: splitbrain clean --run %s)\n", r.runID, left, r.runID)
	}
	if len(errs) > 0 && r.leftover == "" {
		r.log.logf("teardown: %v (nothing of the run remains)", errors.Join(errs...))
	}
	r.log.logf("teardown in %v: candidates stopped %v, containers removed %v, store released %v, sweep %v",
		time.Since(t0).Round(time.Millisecond), tStopped.Sub(t0).Round(time.Millisecond), tRemoved.Sub(tStopped).Round(time.Millisecond),
		tStore.Sub(tRemoved).Round(time.Millisecond), time.Since(tStore).Round(time.Millisecond))
	r.watch.stop()
	r.eng.Close()
}
