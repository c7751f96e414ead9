package suite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/semaphore"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/reports"
)

// Result is the outcome of one case against its expectation.
type Result struct {
	Case     Case
	Outcome  *harness.Outcome // nil when the run could not start
	Observed Observed
	Diffs    []string // empty = the outcome matches the expectation
	Notes    []string // reported, not failed: a bound overrun the tier tolerates
	Err      error    // harness error (the run still healed and tore down)
	Wall     time.Duration
}

// Match reports whether the run produced the expected outcome.
func (r Result) Match() bool { return r.Err == nil && len(r.Diffs) == 0 }

// Overhead is the wall time beyond the planned phases: setup, teardown and checking.
func (r Result) Overhead() time.Duration {
	if d := r.Wall - r.Case.Planned(); d > 0 {
		return d
	}
	return 0
}

// Options configure RunCases.
type Options struct {
	StoreRoot string // root of run directories ("" = harness default)
	Parallel  int    // cases at once (< 1 = 1)
	// IdleExtra: up to this many cases beyond Parallel while the machine's cores idle (half a
	// core for 3 s), taken back when they are busy (suite/elastic.go); 0 = none.
	IdleExtra int
	// Progress receives a line when a case starts and ends; nil = silent.
	Progress io.Writer
	// RunProgress, when set, receives each run's own progress lines (only sensible with Parallel 1).
	RunProgress io.Writer
	// Pool lends store clusters between runs; nil = RunCases makes one and closes it at the
	// end (unless NoReuse).
	Pool *harness.StorePool
	// NoReuse starts a fresh store cluster for every case.
	NoReuse bool
	// Unlinked runs the cases whose store this build does not link (Case.Unlinked: the core
	// build), e.g. a FullBinary; nil = such cases fail, naming the full binary.
	Unlinked UnlinkedRunner
}

// UnlinkedRunner runs the cases a core build cannot. They take a slot only once Ready is
// closed, so rows waiting for the runner never hold back the rows that can run (schedule).
type UnlinkedRunner interface {
	Ready() <-chan struct{}
	Run(context.Context, Case) Result
}

// StoreRetirer is an UnlinkedRunner that can be told a store group's last row has ended: its
// pool then removes that group's idle clusters (harness.StorePool.Retire).
type StoreRetirer interface {
	Retire(store string, nodes int)
}

// RunCase runs one case through harness.Run and compares the outcome with its expectation.
func RunCase(ctx context.Context, c Case, storeRoot string, progress io.Writer) Result {
	return RunCasePooled(ctx, c, storeRoot, progress, nil)
}

// RunCasePooled is RunCase with the store cluster leased from pool (nil = a fresh one).
func RunCasePooled(ctx context.Context, c Case, storeRoot string, progress io.Writer, pool *harness.StorePool) Result {
	cfg := c.Config
	if c.Row.Candidate != "" {
		cfg.CandidateCmd = c.BuildCandidate()
	}
	cfg.StoreRoot = storeRoot
	cfg.Progress = progress
	cfg.StorePool = pool
	cfg.Args = []string{"splitbrain", "matrix", "--filter", "^" + c.Name + "$"}
	start := time.Now()
	out, err := harness.Run(ctx, cfg)
	res := Result{Case: c, Outcome: out, Err: err, Wall: time.Since(start)}
	verdict := harness.VerdictUnknown
	if out != nil {
		verdict = out.Verdict
	}
	var results *checkers.Results
	if out != nil && out.RunDir != "" {
		r, rerr := checkers.ReadResults(filepath.Join(out.RunDir, checkers.ResultsFile))
		if rerr == nil {
			results = r
		} else {
			res.Observed.ResultsError = rerr.Error()
		}
	}
	errText := res.Observed.ResultsError
	res.Observed = Observe(verdict, results)
	res.Observed.ResultsError = errText
	tolerance := 1.0
	if c.Tier == TierSmoke {
		tolerance = SmokeBoundTolerance
	}
	res.Diffs, res.Notes = CompareTolerant(c.Row.Expect, c.Row.Fault != "none", res.Observed, tolerance)
	if results != nil {
		res.Diffs = append(res.Diffs, Recheck(ctx, out.RunDir, results)...)
	}
	if err != nil {
		res.Diffs = append(res.Diffs, "harness error: "+err.Error())
	}
	if out != nil && out.Leftovers != "" {
		res.Diffs = append(res.Diffs, "teardown left Docker objects behind: "+out.Leftovers)
	}
	return res
}

// RunCases runs the cases, Parallel at a time, and returns their results in case order.
func RunCases(ctx context.Context, cases []Case, o Options) []Result {
	n := max(o.Parallel, 1)
	results := make([]Result, len(cases))
	pool := o.Pool
	if pool == nil && !o.NoReuse {
		pool = harness.NewStorePool()
		pool.MaxIdle = n // one cluster per concurrent run of the same store
		// Runs on every return path, also after SIGINT (ctx cancelled) or a panic here.
		defer func() {
			if err := pool.Close(context.WithoutCancel(ctx)); err != nil && o.Progress != nil {
				fmt.Fprintf(o.Progress, "matrix: store pool: %v\n", err)
			}
		}()
	}
	var gate imageGate
	if n > 1 {
		gate = newEngineGate(ctx, pool, io.Discard)
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		if o.Progress != nil {
			mu.Lock()
			fmt.Fprintf(o.Progress, format, args...)
			mu.Unlock()
		}
	}
	// When a store group's last row has ended, its idle clusters go: their servers idled
	// beside the other stores' rows until the matrix ended (docs/performance.md, "Idle
	// clusters retired").
	groups := newGroupsLeft(cases, func(c Case) {
		switch r, ok := o.Unlinked.(StoreRetirer); {
		case c.Unlinked() && ok:
			r.Retire(c.Config.Store, c.Config.StoreNodes)
		case !c.Unlinked():
			pool.Retire(c.Config.Store, c.Config.StoreNodes)
		}
	})
	run := func(i int, c Case) {
		groups.started(c)
		defer groups.ended(c)
		say("matrix: [%d/%d] %s (planned %s) ...\n", i+1, len(cases), c.Name, c.PlanText())
		var r Result
		switch {
		case !c.Unlinked():
			r = RunCasePooled(ctx, c, o.StoreRoot, o.RunProgress, pool)
		case o.Unlinked != nil:
			r = o.Unlinked.Run(ctx, c)
		default:
			err := fmt.Errorf("this is splitbrain's core build, which links no %s client: run the row with the full binary (make build)", c.Config.Store)
			r = Result{Case: c, Err: err, Diffs: []string{"not run: " + err.Error()}}
		}
		results[i] = r
		mark := "✓"
		if !r.Match() {
			mark = "✗ " + strings.Join(r.Diffs, "; ")
		}
		if len(r.Notes) > 0 {
			mark += " (note: " + strings.Join(r.Notes, "; ") + ")"
		}
		say("matrix: [%d/%d] %s: %s in %v %s\n", i+1, len(cases), c.Name, r.Observed.Verdict, r.Wall.Round(time.Second), mark)
	}
	var unlinkedReady <-chan struct{}
	if o.Unlinked != nil {
		unlinkedReady = o.Unlinked.Ready()
	}
	var idle *idleSlots
	if o.IdleExtra > 0 && n > 1 {
		idle = &idleSlots{extra: o.IdleExtra, probe: newCPUSampler().spare, tick: idleTick, say: say}
	}
	schedule(ctx, cases, n, idle, gate, unlinkedReady, run, func(i int, c Case, err error) {
		results[i] = Result{Case: c, Err: err, Diffs: []string{"not run: interrupted"}}
	}, say)
	if idle != nil {
		say("matrix: at most %d row(s) beyond --parallel %d ran while the cores idled\n", idle.mostLent(), n)
	}
	if pool != nil {
		st := pool.Stats()
		say("matrix: store clusters: %d started, %d reuses, %d removed after a failed check or run, %d retired idle\n", st.Launched, st.Reused, st.Discarded, st.Retired)
	}
	return results
}

// schedule calls run for each case, n at once. Without a gate (n = 1) it keeps poolOrder
// and each run ensures its own images. With one: the images every row needs and lacks
// (base, tools, candidate) are built first, alone; then the store servers' images are built
// in the background (startBackgroundBuilds) while the rows whose images exist run, and the
// others follow in the order their images are expected, each once its images are there. A
// row whose images are still missing then (a background build failed, a role no background
// build covers) waits until no row runs and has them built alone, as before. Cases not
// started when ctx ends go to skip. schedule returns when every started run, and every
// background build, has.
//
// With unlinkedReady (a core build handing rows to the full binary), the unlinked cases wait
// until it is closed while the linked ones take the slots, and from then on go before the
// linked cases left: they are the longest rows (Kubernetes clusters), so starting them early
// shortens the tail. Each slot is taken before its row is picked (a free slot waits in the
// pick only when no row can start), and rows of one store cluster hold at most half the slots
// while a row of another can start.
func schedule(ctx context.Context, cases []Case, n int, idle *idleSlots, gate imageGate, unlinkedReady <-chan struct{}, run func(int, Case), skip func(int, Case, error), say func(string, ...any)) {
	extra := 0
	if idle != nil {
		extra = idle.extra
	}
	sem := semaphore.NewWeighted(int64(n + extra))
	var wg sync.WaitGroup
	defer wg.Wait()
	order := poolOrder(cases)
	var bg *backgroundBuilds
	if gate != nil {
		buildShared(ctx, cases, gate, say)
		bctx, stop := context.WithCancelCause(ctx)
		bg = startBackgroundBuilds(bctx, cases, gate, say)
		order = bg.order(cases, order, gate)
		defer func() { stop(errors.New("the matrix ended")); bg.wait() }()
	}
	// One slot stays free while anything builds in the background (store images, the full
	// binary): builds and n rows on two cores stretched the leaders' write answers past the
	// contract's 200 ms write timeout, and at seven at once from a bare machine a given-up
	// write landed after the next tenure's (node-redlock's row invalid in 2 runs of 2, valid
	// in 3 of 3 at six; docs/performance.md, "A slot for the builds").
	hctx, stopHold := context.WithCancel(ctx)
	defer stopHold() // the hold stops waiting for a full binary no row needed any more
	spare := holdBuildSlot(hctx, sem, n, bg, unlinkedReady, say)
	stopLending := func() {}
	if idle != nil {
		// Lent only once nothing builds in the background: the builds run at the lowest
		// weight on what the rows leave, so idle cores then are the builds' to take.
		idle.allowed = spare.buildsDone
		ictx, stopIdle := context.WithCancel(ctx)
		idleDone := idle.start(ictx, sem)
		stopLending = sync.OnceFunc(func() { stopIdle(); <-idleDone })
		defer stopLending()
	}
	q := newCaseQueue(cases, order, unlinkedReady)
	// A case is taken once its background builds have ended, the first such in queue order:
	// waiting for one case's image held back every case behind it, so on a bare machine the
	// Consul and DynamoDB rows, binary and images ready, waited 15 minutes behind an etcd row
	// whose image queued behind Kubernetes's (2026-11-29, /work/runs/cold3).
	settled, changes := func(int) bool { return true }, func() <-chan struct{} { return nil }
	if bg != nil {
		settled = func(i int) bool { return bg.settled(cases[i], gate) }
		changes = bg.changes
	}
	// At most half the slots go to rows of one store cluster while rows of another can start:
	// a group's first n rows each started a cluster of their own (a default tier started 40;
	// the seven redis-multi rows six five-node clusters), where taking turns with the next
	// group lets its later rows reuse the first ones' (docs/performance.md, "Fewer clusters").
	// Never at the cost of an idle slot: with no other row startable, the group takes it.
	storeCap := (n + 1) / 2
	var mu sync.Mutex
	onStore := map[storeGroup]int{}
	underCap := func(i int) bool {
		mu.Lock()
		defer mu.Unlock()
		return onStore[groupOf(cases[i])] < storeCap
	}
	for {
		// The slot first, so the pick sees what runs.
		if err := sem.Acquire(ctx, 1); err != nil {
			for {
				i, ok := q.nextSettled(ctx, settled, underCap, changes)
				if !ok {
					break
				}
				skip(i, cases[i], context.Cause(ctx))
			}
			break
		}
		i, ok := q.nextSettled(ctx, settled, underCap, changes)
		if !ok {
			sem.Release(1)
			break
		}
		c := cases[i]
		if ctx.Err() != nil {
			sem.Release(1)
			skip(i, c, context.Cause(ctx))
			continue
		}
		var missing []images.Role
		if gate != nil {
			failed := bg.failed(c, gate)
			for _, r := range gate.unbuilt(c) {
				if !slices.Contains(failed, r) {
					missing = append(missing, r)
				}
			}
		}
		if len(missing) > 0 {
			spare.release() // no row runs beside a build alone: nothing to leave the slot to
			stopLending()   // its permits back, so the build waits for every row
			if n+extra > 1 {
				if err := sem.Acquire(ctx, int64(n+extra-1)); err != nil {
					sem.Release(1)
					skip(i, c, context.Cause(ctx))
					continue
				}
			}
			say("matrix: [%d/%d] %s: building images first (%s), no row running meanwhile ...\n", i+1, len(cases), c.Name, roleNames(missing))
			start := time.Now()
			if err := gate.build(ctx, c, missing, false); err != nil {
				say("matrix: [%d/%d] %s: image build failed after %v (the run reports it): %v\n", i+1, len(cases), c.Name, time.Since(start).Round(time.Second), err)
			} else {
				say("matrix: [%d/%d] %s: images built in %v\n", i+1, len(cases), c.Name, time.Since(start).Round(time.Second))
			}
			sem.Release(int64(n - 1))
			extra = 0 // the lender's permits stay taken: n at once from here
		}
		g := groupOf(c)
		mu.Lock()
		onStore[g]++
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer func() {
				mu.Lock()
				onStore[g]--
				mu.Unlock()
				sem.Release(1)
				wg.Done()
			}()
			run(i, c)
		}()
	}
}

// buildSlot is a semaphore slot held while background builds run; release gives it back
// once, whichever comes first: the builds ending, the context, or a build alone.
type buildSlot struct {
	once     sync.Once
	sem      *semaphore.Weighted
	building <-chan struct{} // closed when the background builds have ended
}

func (b *buildSlot) release() {
	if b.sem != nil {
		b.once.Do(func() { b.sem.Release(1) })
	}
}

// buildsDone says nothing builds in the background any more (also when no slot was held for
// the builds: below minParallelForBuildSlot).
func (b *buildSlot) buildsDone() bool {
	select {
	case <-b.building:
		return true
	default:
		return false
	}
}

// minParallelForBuildSlot: below three at once a held slot would halve the rows or stop them.
const minParallelForBuildSlot = 3

// holdBuildSlot takes one of sem's n slots while bg's builds run or unlinkedReady is open,
// and gives it back when both have ended. Nothing is held when nothing builds.
func holdBuildSlot(ctx context.Context, sem *semaphore.Weighted, n int, bg *backgroundBuilds, unlinkedReady <-chan struct{}, say func(string, ...any)) *buildSlot {
	building := make(chan struct{})
	go func() {
		defer close(building)
		if bg != nil {
			bg.wait()
		}
		if unlinkedReady != nil {
			select {
			case <-unlinkedReady:
			case <-ctx.Done():
			}
		}
	}()
	select {
	case <-building:
		return &buildSlot{building: building}
	default:
	}
	if n < minParallelForBuildSlot || sem.Acquire(ctx, 1) != nil {
		return &buildSlot{building: building}
	}
	b := &buildSlot{sem: sem, building: building}
	say("matrix: %d rows at once while images or the full binary build in the background, %d once they are done\n", n-1, n)
	go func() {
		<-building // also closed soon after ctx ends: the builds stop with it
		if ctx.Err() == nil {
			say("matrix: the background builds are done: %d rows at once from now\n", n)
		}
		b.release()
	}()
	return b
}

// groupsLeft counts each store group's rows not started yet and those running, and calls
// retire when the group's last row has ended (rows of no store have no clusters to retire).
// Not sooner: a row that has started may not have taken its cluster from the pool yet.
type groupsLeft struct {
	mu      sync.Mutex
	left    map[storeGroup]int
	running map[storeGroup]int
	retire  func(Case)
}

func newGroupsLeft(cases []Case, retire func(Case)) *groupsLeft {
	g := &groupsLeft{left: map[storeGroup]int{}, running: map[storeGroup]int{}, retire: retire}
	for _, c := range cases {
		g.left[groupOf(c)]++
	}
	return g
}

func (g *groupsLeft) started(c Case) {
	g.mu.Lock()
	g.left[groupOf(c)]--
	g.running[groupOf(c)]++
	g.mu.Unlock()
}

func (g *groupsLeft) ended(c Case) {
	g.mu.Lock()
	k := groupOf(c)
	g.running[k]--
	last := g.left[k] == 0 && g.running[k] == 0
	g.mu.Unlock()
	if last && c.Config.Store != "" && c.Config.Store != storekinds.None {
		g.retire(c)
	}
}

// storeGroup is a store cluster's kind and size: rows with the same one can share a pooled
// cluster.
type storeGroup struct {
	store string
	nodes int
}

// groupOf is the case's store group; an unset size is the store's default, as the pool's key
// has it, so rows that set the default and rows that leave it unset share their clusters.
func groupOf(c Case) storeGroup {
	n := c.Config.StoreNodes
	if d, ok := storekinds.Lookup(c.Config.Store); ok && n == 0 {
		n = d.DefaultNodes
	}
	return storeGroup{c.Config.Store, n}
}

// caseQueue hands schedule its cases in order, the unlinked ones (Case.Unlinked) held back
// until unlinkedReady is closed and then first.
type caseQueue struct {
	linked, unlinked []int
	isUnlinked       map[int]bool
	unlinkedReady    <-chan struct{}
}

func newCaseQueue(cases []Case, order []int, unlinkedReady <-chan struct{}) *caseQueue {
	q := &caseQueue{unlinkedReady: unlinkedReady, isUnlinked: map[int]bool{}}
	for _, i := range order {
		if unlinkedReady != nil && cases[i].Unlinked() {
			q.unlinked = append(q.unlinked, i)
			q.isUnlinked[i] = true
		} else {
			q.linked = append(q.linked, i)
		}
	}
	return q
}

// nextSettled is the first case, in queue order, that can be taken now: settled (its
// background builds have ended) and, when unlinked, with the full binary ready (unlinked
// cases then come first); among those the first that prefer accepts, else the first. When none
// can, it waits for a build to end (changes: a channel closed on the next one), for the full
// binary or for ctx; false when no case is left. A cancelled ctx releases the cases in order,
// for schedule to skip.
func (q *caseQueue) nextSettled(ctx context.Context, settled, prefer func(int) bool, changes func() <-chan struct{}) (int, bool) {
	take := func(s *[]int, k int) int { i := (*s)[k]; *s = slices.Delete(*s, k, k+1); return i }
	for {
		if len(q.linked) == 0 && len(q.unlinked) == 0 {
			return 0, false
		}
		if ctx.Err() != nil {
			if len(q.linked) > 0 {
				return take(&q.linked, 0), true
			}
			return take(&q.unlinked, 0), true
		}
		changed := changes() // before the look, so a build ending during it is not missed
		ready := false
		select {
		case <-q.unlinkedReady:
			ready = true
		default:
		}
		for _, ok := range []func(int) bool{func(i int) bool { return settled(i) && prefer(i) }, settled} {
			if ready {
				if k := slices.IndexFunc(q.unlinked, ok); k >= 0 {
					return take(&q.unlinked, k), true
				}
			}
			if k := slices.IndexFunc(q.linked, ok); k >= 0 {
				return take(&q.linked, k), true
			}
		}
		unlinkedReady := q.unlinkedReady
		if ready {
			unlinkedReady = nil // closed: it would wake the wait at once
		}
		select {
		case <-changed:
		case <-unlinkedReady:
		case <-ctx.Done():
		}
	}
}

// buildShared builds, before any row starts, the images that are no store server's (base,
// tools, candidate) that some case lacks: every row needs them, and every store image is
// built on the base.
func buildShared(ctx context.Context, cases []Case, gate imageGate, say func(string, ...any)) {
	server := map[images.Role]bool{}
	for _, d := range storekinds.All() {
		for _, r := range d.Roles() {
			server[images.Role(r)] = true
		}
	}
	for _, c := range cases {
		var shared []images.Role
		for _, r := range gate.unbuilt(c) {
			if !server[r] {
				shared = append(shared, r)
			}
		}
		if len(shared) == 0 || ctx.Err() != nil {
			continue
		}
		say("matrix: building the images every row needs first (%s) ...\n", roleNames(shared))
		start := time.Now()
		if err := gate.build(ctx, c, shared, false); err != nil {
			say("matrix: image build failed after %v (the rows report it): %v\n", time.Since(start).Round(time.Second), err)
			return
		}
		say("matrix: images built in %v\n", time.Since(start).Round(time.Second))
	}
}

// poolOrder is the order to run cases in: grouped by store cluster (store kind and size), so
// pooled clusters are started once per kind instead of once per change of store (the default
// tier changed store 14 times for 8 stores in file order) and each store's images are built
// once, up front. Longest first, as far as the grouping allows: the groups by their longest
// planned row, the rows of a group by their planned length, file order among equals. In file
// order the three Pacemaker rows (a minute each) came last and ran alone at the end of the
// default tier (2026-11-29: the tier's last 70 s).
func poolOrder(cases []Case) []int {
	var keys []storeGroup
	groups := map[storeGroup][]int{}
	longest := map[storeGroup]time.Duration{}
	for i, c := range cases {
		k := groupOf(c)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
		longest[k] = max(longest[k], c.Planned())
	}
	slices.SortStableFunc(keys, func(a, b storeGroup) int { return cmp.Compare(longest[b], longest[a]) })
	order := make([]int, 0, len(cases))
	for _, k := range keys {
		g := groups[k]
		slices.SortStableFunc(g, func(a, b int) int { return cmp.Compare(cases[b].Planned(), cases[a].Planned()) })
		order = append(order, g...)
	}
	return order
}

// Summary aggregates a batch of results.
type Summary struct {
	Cases, Matched int
	Wall           time.Duration // sum of run wall times
	Overhead       time.Duration // sum of setup + teardown + checking
}

// Summarize totals results.
func Summarize(rs []Result) Summary {
	var s Summary
	for _, r := range rs {
		s.Cases++
		if r.Match() {
			s.Matched++
		}
		s.Wall += r.Wall
		s.Overhead += r.Overhead()
	}
	return s
}

// OverheadShare is overhead / wall (0 without runs).
func (s Summary) OverheadShare() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(s.Overhead) / float64(s.Wall)
}

// WriteTable prints the verdict table: row, expected, got, failover median, match.
func WriteTable(w io.Writer, rs []Result) {
	nameW := len("row")
	for _, r := range rs {
		nameW = max(nameW, utf8.RuneCountInString(r.Case.Name))
	}
	fmt.Fprintf(w, "%-*s  %-8s  %-8s  %-9s  %-7s  %s\n", nameW, "row", "expected", "got", "failover", "wall", "match")
	for _, r := range rs {
		fo := "-"
		if m := r.Observed.MedianFailover(); m >= 0 {
			fo = m.Round(10 * time.Millisecond).String()
		}
		got := r.Observed.Verdict
		if got == "" {
			got = "-"
		}
		mark := "✓"
		if !r.Match() {
			mark = "✗ " + strings.Join(r.Diffs, "; ")
		}
		fmt.Fprintf(w, "%-*s  %-8s  %-8s  %-9s  %-7s  %s\n", nameW, r.Case.Name, r.Case.Row.Expect.Verdict, got, fo,
			r.Wall.Round(time.Second), mark)
	}
	s := Summarize(rs)
	fmt.Fprintf(w, "%d/%d rows as expected; run time %v, harness overhead %v (%.0f%%)\n",
		s.Matched, s.Cases, s.Wall.Round(time.Second), s.Overhead.Round(time.Second), 100*s.OverheadShare())
}

// WriteJUnit writes the matrix outcome as JUnit XML to path: one testcase per case,
// failing when the outcome differs, an error when the harness failed.
func WriteJUnit(path, suiteName string, rs []Result) error {
	var cases []reports.JUnitCase
	for _, r := range rs {
		jc := reports.JUnitCase{Name: r.Case.Name, Classname: "splitbrain.matrix." + r.Case.Row.Store, Seconds: r.Wall.Seconds()}
		var out []string
		if r.Outcome != nil {
			out = append(out, "run dir: "+r.Outcome.RunDir)
		}
		out = append(out, fmt.Sprintf("expected %s, got %s; reasons %v; findings %v",
			r.Case.Row.Expect.Verdict, r.Observed.Verdict, r.Observed.Reasons, r.Observed.Findings))
		for _, n := range r.Notes {
			out = append(out, "note: "+n)
		}
		jc.SystemOut = strings.Join(out, "\n")
		switch {
		case r.Err != nil:
			jc.Error = &reports.JUnitProblem{Message: "harness error", Type: "harness", Text: r.Err.Error() + "\n" + strings.Join(r.Diffs, "\n")}
		case len(r.Diffs) > 0:
			jc.Failure = &reports.JUnitProblem{Message: "outcome differs from the matrix", Type: "mismatch", Text: strings.Join(r.Diffs, "\n")}
		}
		cases = append(cases, jc)
	}
	return reports.WriteJUnitCases(path, suiteName, cases)
}
