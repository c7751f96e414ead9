package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/internal/progress"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/faultproxy"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
	"github.com/splitbrain-chaos/splitbrain/workloads"
)

// Bounds of the lifecycle's own work.
const (
	// teardownTimeout bounds heal + teardown, which run on a context that survives
	// cancellation (SIGINT, go test deadline) so nothing is left behind.
	teardownTimeout = 2 * time.Minute
	// startupWindow: candidates that all exit within this time after start are broken
	// (missing command, bad environment); the run stops with their log tails.
	startupWindow = 5 * time.Second
	// candidateStopGrace is how long a candidate gets to resign on SIGTERM at teardown.
	candidateStopGrace = 5 * time.Second
	procPollInterval   = 200 * time.Millisecond
	resourcePort       = "8080"
)

// Outcome is what a run produced.
type Outcome struct {
	Verdict  string   `json:"verdict"` // valid | invalid | unknown
	Reasons  []string `json:"reasons,omitempty"`
	Findings []string `json:"findings,omitempty"` // verdict-neutral findings (overlaps, unavailability, ...)
	// Explanations tell how each reason code came about (first occurrence), "code: story".
	Explanations []string      `json:"explanations,omitempty"`
	RunDir       string        `json:"run_dir"`
	RunID        string        `json:"run_id"`
	Counts       Counts        `json:"counts"`
	Leaders      []string      `json:"leaders"` // candidates elected at least once
	StoreVersion string        `json:"store_version,omitempty"`
	Elapsed      time.Duration `json:"elapsed"`
	// HealError is set when undoing a fault failed; the run still tore everything down.
	HealError string `json:"heal_error,omitempty"`
	// Leftovers lists Docker objects of the run that teardown could not remove.
	Leftovers string `json:"leftovers,omitempty"`
	// StoreReuse says whether a pooled store cluster was fresh or reused (Config.StorePool).
	StoreReuse string `json:"store_reuse,omitempty"`
	// StoreContainers are the Docker ids of the store nodes, in node order.
	StoreContainers []string `json:"store_containers,omitempty"`
}

// run is one run in progress.
type run struct {
	cfg  Config
	prep prepared
	dir  string
	// clockDir holds one directory per candidate with its clock file, bind-mounted read-only
	// into the candidate's container (clockdir.go); removed after teardown.
	clockDir string
	runID    string
	started  time.Time
	w        *history.Writer
	rec      *Recorder
	state    *LiveState
	out      io.Writer // progress and summary; io.Discard when quiet
	prog     *progress.Progress
	// harnessLog keeps the run's own log lines (logs/harness.log), also when the progress
	// output is quiet, as in `splitbrain matrix` without -v.
	harnessLog *log.Logger

	// root is the caller's context: when it ends the run heals and tears down.
	root context.Context

	eng      *platform.Engine
	net      *platform.Network
	imgs     images.Set
	cluster  stores.Cluster
	resource *platform.Node
	// storeProxy is the fault proxy container and proxy its links, only in runs whose plan
	// has a fault acting through it (a kind whose traits say Proxy: `splitbrain nemesis list`).
	storeProxy *platform.Node
	proxy      *faultproxy.Proxy
	mu         sync.Mutex
	cands      []*proc
	byName     map[string]*proc
	nem        *nemesis.Nemesis
	plan       nemesis.Plan
	stopProcs  context.CancelFunc
	procsDone  chan struct{}
	podDeletes sync.WaitGroup // Pods of exited candidates being deleted (pods.go)

	lifeStart time.Time // warmup start: progress counts elapsed/total from here
	healErr   error
	// lease is the pooled store cluster (Config.StorePool); nil = the run owns its cluster.
	lease        *storeLease
	finishReason string // why the run ended early ("" = it completed)
	finished     bool   // finish ran (it must run exactly once, also when a panic follows it)
	leftover     string
	watch        watchState  // the engine's container events
	phaseNow     string      // the lifecycle phase in progress
	phaseAt      time.Time   // when it began
	goals        *phaseGoals // what each phase waits for in an event-ended run (Config.Until); nil = time-ended
	fence        fenceState  // the run's fence device (fence.go)
}

// Run executes one chaos run end to end and returns its outcome. Whatever happens (error,
// panic, ctx cancelled by SIGINT or a test deadline) every fault is healed and every
// container and the network of the run are removed before Run returns (or re-panics). A
// harness failure returns an error; the Outcome is then still filled as far as it got.
func Run(ctx context.Context, cfg Config) (out *Outcome, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	prep, err := prepare(&cfg)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, prep: prep, root: ctx, started: time.Now(), state: NewLiveState(), byName: map[string]*proc{}}
	r.out = cfg.Progress
	if r.out == nil {
		r.out = io.Discard
	}
	r.prog = progress.NewProgress(r.out, cfg.ProgressMode)
	r.prog.Period = cfg.ProgressPeriod
	r.runID = platform.NewRunID()
	if r.dir, err = CreateRunDir(cfg.StoreRoot, cfg.TestName, r.started); err != nil {
		return nil, err
	}
	if r.w, err = history.Create(filepath.Join(r.dir, HistoryFile)); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(r.dir, LogsDir, HarnessLog))
	if err != nil {
		r.w.Close()
		return nil, err
	}
	defer logFile.Close()
	r.harnessLog = log.New(logFile, "", log.Ltime|log.Lmicroseconds)
	r.rec = NewRecorder(r.w, r.state)
	r.rec.beforeEvent = r.beforeCandidateEvent
	r.record(history.Event{Source: history.SourceHarness, Kind: history.KindRunStart, Spec: r.summary()})
	if err := r.writeConfig(); err != nil {
		r.w.Close()
		return nil, err
	}

	// After the first Ctrl-C, say what a second one does and how to clean up after it.
	stopHint := context.AfterFunc(ctx, func() {
		fmt.Fprintln(os.Stderr, interruptHint(context.Cause(ctx), r.runID, r.cfg.StorePool.IDs()...))
	})
	defer stopHint()
	progressDone := r.startProgress()
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
	out, checkErr := r.conclude(ctx)
	r.printSummary(out)
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

// CheckConfig validates cfg (filling in defaults) and resolves the recipe, the nemesis
// schedule and the workload, without starting anything: the errors of a bad command line.
// Every problem is reported at once.
func CheckConfig(cfg *Config) error {
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
		return errors.Join(verr, perr)
	}
	_, perr := prepare(cfg)
	return errors.Join(verr, perr)
}

// prepared holds what setup needs from other registries, resolved before anything starts.
type prepared struct {
	recipe   recipeInfo
	schedule nemesis.Schedule
	seed     int64
	workload workloads.Workload
}

// prepare resolves the recipe, the nemesis schedule and the workload, so bad names fail
// before a single container starts.
func prepare(cfg *Config) (prepared, error) {
	var p prepared
	var errs []error
	var err error
	if cfg.Recipe != "" && cfg.CandidateCmd == "" && cfg.CandidateImage == "" {
		if p.recipe, err = lookupRecipe(cfg.Recipe, cfg.Store, cfg); err != nil {
			errs = append(errs, err)
		}
	}
	p.seed = cfg.Seed
	if p.seed == 0 {
		p.seed = time.Now().UnixNano()
		cfg.Seed = p.seed
	}
	spec := cfg.Nemesis
	if cfg.Cycles > 0 {
		if spec, err = nemesis.PacedSpec(cfg.Nemesis, cfg.Cycles); err != nil {
			errs = append(errs, fmt.Errorf("--nemesis %q: %w", cfg.Nemesis, err))
		}
	}
	if p.schedule, err = nemesis.Parse(spec); err != nil {
		errs = append(errs, fmt.Errorf("--nemesis: %w", err))
	} else {
		if cfg.storeless() {
			if err := checkStoreless(p.schedule); err != nil {
				errs = append(errs, fmt.Errorf("--nemesis %q: %w", cfg.Nemesis, err))
			}
		}
		// A Go recipe declares its steps; an external candidate's are unknown, so its step
		// triggers are taken on trust.
		if p.recipe.Name != "" {
			if err := p.schedule.CheckSteps(p.recipe.Name, p.recipe.Steps); err != nil {
				errs = append(errs, fmt.Errorf("--nemesis: %w", err))
			}
		}
		if cfg.Until != "" {
			if err := checkUntil(cfg.Until, p.schedule); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := precheckTopology(cfg, p); err != nil {
		errs = append(errs, err)
	}
	if p.workload, err = workloads.New(cfg.Workload, workloads.Options{
		TTL: cfg.TTL, HandoffEvery: cfg.HandoffEvery, HandoffPause: cfg.HandoffPause,
	}); err != nil {
		errs = append(errs, fmt.Errorf("--workload: %w", err))
	}
	return p, errors.Join(errs...)
}

// interruptHint is what the first Ctrl-C prints: what happens now, what a second one does,
// and the commands that clean up after it: the run's own objects, and the pooled store
// clusters (matrix), whose containers and network carry the pool entries' ids.
func interruptHint(cause error, runID string, poolIDs ...string) string {
	cleanup := "splitbrain clean --run " + runID
	for _, id := range poolIDs {
		cleanup += " && splitbrain clean --run " + id
	}
	return fmt.Sprintf("splitbrain: %v: healing faults and removing run %s; a second Ctrl-C stops at once and skips cleanup (then remove what is left with: %s)",
		cause, runID, cleanup)
}

// record appends a harness-side event, timestamped now unless it carries its own time.
func (r *run) record(e history.Event) (history.Event, error) {
	if e.T == 0 {
		e.T = history.Now()
	}
	return r.rec.Record(e)
}

// harnessError records a failure of the harness's own work in the history, where the
// checkers see it: the verdict depends on the run directory alone. phase "" = the phase
// in progress.
func (r *run) harnessError(phase, msg string) {
	if phase == "" {
		r.mu.Lock()
		phase = r.phaseNow
		r.mu.Unlock()
	}
	r.record(history.Event{Source: history.SourceHarness, Kind: history.KindHarnessError, Phase: phase, Reason: msg})
}

// phaseStarted is when the phase in progress began.
func (r *run) phaseStarted() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.phaseAt
}

func (r *run) phase(name string) {
	r.mu.Lock()
	r.phaseNow, r.phaseAt = name, time.Now()
	r.mu.Unlock()
	r.record(history.Event{Source: history.SourceHarness, Kind: history.KindPhase, Phase: name})
}

func (r *run) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if r.harnessLog != nil {
		r.harnessLog.Print(msg)
	}
	r.prog.Event("log", "splitbrain: "+msg, nil)
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

// lifecycle runs setup → warmup → faults → heal → recovery. Teardown is finish's.
func (r *run) lifecycle(ctx context.Context) error {
	r.phase(history.PhaseSetup)
	if err := r.setup(ctx); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	r.phase(history.PhaseWarmup)
	r.mu.Lock()
	r.lifeStart = time.Now()
	r.mu.Unlock()
	if err := r.warmup(ctx); err != nil {
		return err
	}
	r.phase(history.PhaseFaults)
	if err := r.faults(ctx); err != nil {
		return err
	}
	r.phase(history.PhaseHeal)
	if err := r.heal(ctx); err != nil {
		return err
	}
	if err := r.ensureCandidatesRunning(ctx); err != nil {
		return err
	}
	r.phase(history.PhaseRecovery)
	return r.waitPhase(ctx, r.cfg.Recovery)
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

func sleepCtx(ctx context.Context, d time.Duration) error { return sleepUntil(ctx, d, nil) }

// sleepUntil waits d, or less when done closes (a nil done never does); it returns ctx's
// cause when ctx ends first.
func sleepUntil(ctx context.Context, d time.Duration, done <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
	case <-done:
	}
	return nil
}

// warmup lets the candidates elect a leader without faults. During its first seconds it
// watches for candidates that all die at once: a broken command or environment.
func (r *run) warmup(ctx context.Context) error {
	end := time.Now().Add(r.cfg.Warmup)
	check := time.Now().Add(min(startupWindow, r.cfg.Warmup))
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
		if r.allCandidatesExited(ctx) {
			return fmt.Errorf("every candidate exited right after start: the candidate command is broken or rejects its environment.\n%s", r.candidateLogTails(15))
		}
	}
	return r.waitPhase(ctx, time.Until(end))
}

// faults runs the nemesis plan and the workload for the faults phase.
func (r *run) faults(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(ctx, r.cfg.FaultTime)
	defer cancel()
	var wg sync.WaitGroup
	var nemErr, wlErr error
	if r.nem != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer catchPanic("nemesis", &nemErr)
			nemErr = r.nem.Run(fctx, r.plan)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer catchPanic("workload", &wlErr)
		wlErr = r.prep.workload.Run(fctx, workloadEnv{r})
	}()
	var goalMet <-chan struct{}
	if r.goals != nil {
		goalMet = r.goals.faultsOK
	}
	select {
	case <-fctx.Done():
		if r.goals != nil && ctx.Err() == nil {
			r.logf("the faults phase timed out after %v before its goal: %s (the run is unknown)", r.cfg.FaultTime, r.goals.missing())
		}
	case <-goalMet:
		r.logf("the faults phase met its goal (%s) after %v", r.goal(), time.Since(r.phaseStarted()).Round(time.Millisecond))
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
		r.healErr = errors.Join(r.healErr, nemErr)
		r.logf("HEAL FAILED during the faults phase: %v", nemErr)
	}
	if wlErr != nil {
		r.logf("workload %s: %v", r.cfg.Workload, wlErr)
	}
	return nil
}

// heal undoes every fault (idempotent). A failed heal is reported loudly, recorded, and the
// run goes on to teardown.
func (r *run) heal(ctx context.Context) error {
	if r.nem == nil {
		return nil
	}
	if err := r.nem.HealAll(ctx); err != nil {
		r.healErr = errors.Join(r.healErr, err)
		r.harnessError(history.PhaseHeal, "heal failed: "+err.Error())
		fmt.Fprintf(r.out, "splitbrain: HEAL FAILED: %v\n", err)
		if r.cfg.Progress == nil {
			fmt.Fprintf(os.Stderr, "splitbrain: HEAL FAILED: %v\n", err)
		}
		return fmt.Errorf("heal failed: %w", err)
	}
	return nil
}

// finish heals (again, idempotently), tears everything down, records run-end and closes the
// history. It runs on every path and never uses a cancelled context.
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
		r.phase(history.PhaseHeal)
		if r.nem != nil {
			if err := r.nem.HealAll(ctx); err != nil {
				r.healErr = errors.Join(r.healErr, err)
				r.harnessError(history.PhaseHeal, "heal failed: "+err.Error())
				fmt.Fprintf(os.Stderr, "splitbrain: HEAL FAILED: %v\n", err)
			}
		}
	}
	r.phase(history.PhaseTeardown)
	r.teardown(ctx)
	r.removeClockDir()
	if reason == "" && r.root.Err() != nil {
		// A signal during teardown: teardown still finished, but the run was interrupted.
		reason = "cancelled during teardown: " + context.Cause(r.root).Error()
		r.finishReason = reason
	}
	r.record(history.Event{Source: history.SourceHarness, Kind: history.KindRunEnd, Reason: reason})
	r.rec.Close()
	if err := r.w.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "splitbrain: history %s: %v\n", filepath.Join(r.dir, HistoryFile), err)
	}
}

// teardown stops the candidates gracefully (recording their exits), then removes every
// container and the network; a sweep by run id catches whatever is left.
func (r *run) teardown(ctx context.Context) {
	if r.eng == nil {
		return
	}
	r.watch.live.Store(false) // teardown stops and removes everything on purpose
	r.closeFence()
	t0 := time.Now()
	var wg sync.WaitGroup
	// Followers first, then whoever leads: a leader that resigns while followers still run
	// hands over, and that teardown election would count as one of the run's.
	followers, leaders := r.candidatesByLeadership()
	for _, group := range [][]*proc{followers, leaders} {
		for _, p := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.stopCandidate(ctx, p)
			}()
		}
		wg.Wait()
	}
	if r.stopProcs != nil {
		r.stopProcs()
		<-r.procsDone
	}
	r.waitPodDeletes(ctx)
	tStopped := time.Now()
	// Remove every container at once; the network goes after them.
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
	for _, p := range r.candidates() {
		if p.node != nil {
			remove(p.node.Terminate)
		}
	}
	if r.resource != nil {
		remove(r.resource.Terminate)
	}
	if r.storeProxy != nil {
		remove(r.storeProxy.Terminate)
	}
	// A leased cluster is checked while the rest goes; it is wiped (or removed) after, when
	// no candidate can reach it any more.
	var whyNotReuse string
	switch {
	case r.lease != nil:
		wg.Add(1)
		go func() {
			defer wg.Done()
			whyNotReuse = r.reusable(ctx)
		}()
	case r.cluster != nil:
		remove(r.cluster.Close)
	}
	wg.Wait()
	tRemoved := time.Now()
	if r.lease != nil {
		if err := r.releaseStore(ctx, whyNotReuse); err != nil {
			errs = append(errs, err)
		}
	} else if r.net != nil {
		if err := r.net.Remove(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	tStore := time.Now()
	// Last resort: anything labelled with this run (nemesis sidecars, half-started nodes).
	if rep, err := r.eng.Sweep(ctx, platform.SweepFilter{RunID: r.runID}); err != nil {
		errs = append(errs, err)
	} else if !rep.Empty() {
		r.logf("sweep removed leftovers of run %s: containers %v networks %v", r.runID, rep.Containers, rep.Networks)
	}
	if left, err := r.eng.Leftovers(ctx, r.runID); err == nil && !left.Empty() {
		r.leftover = left.String()
		r.harnessError(history.PhaseTeardown, fmt.Sprintf("left Docker objects of run %s behind: %s", r.runID, left))
		fmt.Fprintf(os.Stderr, "splitbrain: teardown left Docker objects of run %s behind: %s (remove with: splitbrain clean --run %s)\n", r.runID, left, r.runID)
	}
	if len(errs) > 0 && r.leftover == "" {
		r.logf("teardown: %v (nothing of the run remains)", errors.Join(errs...))
	}
	r.logf("teardown in %v: candidates stopped %v, containers removed %v, store released %v, sweep %v",
		time.Since(t0).Round(time.Millisecond), tStopped.Sub(t0).Round(time.Millisecond), tRemoved.Sub(tStopped).Round(time.Millisecond),
		tStore.Sub(tRemoved).Round(time.Millisecond), time.Since(tStore).Round(time.Millisecond))
	r.stopWatch()
	r.eng.Close()
}

func (r *run) candidates() []*proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*proc(nil), r.cands...)
}

// candidatesByLeadership splits the candidates into those not leading now and those leading
// (by the live state: more than one leads during an overlap).
func (r *run) candidatesByLeadership() (followers, leaders []*proc) {
	leading := map[string]bool{}
	for _, t := range r.state.Leaders() {
		leading[t.Node] = true
	}
	for _, p := range r.candidates() {
		if leading[p.name] {
			leaders = append(leaders, p)
		} else {
			followers = append(followers, p)
		}
	}
	return followers, leaders
}

// allCandidatesExited reads every candidate's state fresh.
func (r *run) allCandidatesExited(ctx context.Context) bool {
	cands := r.candidates()
	if len(cands) == 0 {
		return false
	}
	for _, p := range cands {
		r.observe(ctx, p, true)
		if p.isRunning() {
			return false
		}
	}
	return true
}

// candidateLogTails formats the last lines of every candidate's log for an error message.
func (r *run) candidateLogTails(lines int) string {
	var b strings.Builder
	for _, p := range r.candidates() {
		path := filepath.Join(r.dir, LogsDir, p.name+".log")
		fmt.Fprintf(&b, "--- %s (%s), last %d lines:\n%s\n", p.name, path, lines, tailFile(path, lines))
	}
	return b.String()
}

// tailFile returns the last n lines of a file ("(empty)" or the error when there are none).
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	text := strings.TrimRight(string(b), "\n")
	if text == "" {
		return "(empty)"
	}
	ls := strings.Split(text, "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// electedNodes lists the candidates that were elected at least once.
func electedNodes(ts []checkers.Tenure) []string {
	seen := map[string]bool{}
	for _, tn := range ts {
		seen[tn.Node] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
