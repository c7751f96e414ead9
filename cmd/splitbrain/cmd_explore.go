package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/explore"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/history/runfile"
	"github.com/splitbrain-chaos/splitbrain/internal/progress"
	"github.com/splitbrain-chaos/splitbrain/shrink"
)

func init() {
	register(command{name: "explore", summary: "search for a violation: guided fault chains (or random schedules) run again and again until one is invalid, then shrunk to a one-line reproduction", run: runExplore})
}

// exploreHelp is `splitbrain explore --help`'s text before the flags.
const exploreHelp = `Usage: splitbrain explore --store S --recipe R --time 30s [run flags] [--budget 10m]
       [--mode guided|random] [--faults pause,kill] [--corpus FILE [--resume]]

Runs the recipe again and again with a fresh seed and fault schedule each time, until one
run is invalid; then shrinks that run and prints a one-line 'splitbrain run' that reproduces
it, with its measured reproduction rate. Every run is a normal run directory under
<out>/<name>/ (report, replay, shrink work on it); a store cluster is kept between runs.

--mode guided (default): each schedule is a causal chain of 1-3 faults: the first starts on
the leader's writes (on=write:3, on=write) or 0-4xTTL into the faults phase; each next one on
the previous fault's start or end (on=fault-start / on=fault-end) or on a protocol event the
faults cause (elected, stepped-down, campaigning, a step the recipe declares), after
0-1xTTL. Targets are roles (leader, follower, the event's candidate, all candidates, store
leader, all store, ...), durations 0.5-4xTTL, 3-5 candidates (giving --nodes fixes it).
Faults on the leader (target=leader, the trigger, the leader's cut from the store) are
drawn 3 times as often as others and held past the TTL 3 times in 4. A crash (kill)
restarts at once (for=0.1xTTL) one time in 2. On a store that keeps its data only in memory
(redis, redis-multi, dynamodb: a restarted server has forgotten every lock and counter) one
fresh chain in 3 opens with a crash of a store majority (or all of it) that restarts at once. Each run may use only
a random half of the fault kinds (swarm testing; fence faults only once a run asked the
fence device). The run's faults phase ends once the chain ran and healed, a leader is
back at work and a TTL passed since the last heal (--until faults,settle=TTL,stall=3xTTL: a
link whose event never came ends the run unknown 3xTTL after the last fault; --time is the
timeout). From each run's history a behaviour
signature is computed (faults by the role they hit, elections, step-downs and writes
during faults, two leaders at once, a token granted twice, a step-down with no new
election, the order of these steps, and how near a violation it came: a leader held past
its TTL, its write after that, the gap between a leader's last write and its successor's
election). A schedule that showed a feature no run had shown, or came nearer a violation
than any before, enters the corpus. The first 6 runs are fresh chains; after them one
schedule in two is a mutation of a corpus entry (another trigger, target, kind or
duration, a fault added to or removed from the chain, another node count), preferring
entries near a violation. --corpus FILE keeps the corpus; --resume goes on from it.
--mode random: independent schedules, each fault at a random time or on a candidate event,
held 1-4xTTL once or repeatedly (the faults phase lasts --time).

An invalid run also gets a "late writes" line: each write that made it invalid (accepted
stale, or after a newer tenure's write) is placed by its send time against the next
leader's election. "in flight at the takeover" (sent before it, accepted after) is the
check-then-send window any lease without a fence has: only a fenced resource closes it.
"sent after the next leader's election" is what a wrong or missing lease check does (a
pause between a valid check and the send looks the same and is counted here). "window
only" means in-flight writes and nothing else; the verdict stays invalid either way.

Each invalid run gets a cause, from its fault windows before the first violation:
store-amnesia (an in-memory store, redis/redis-multi/dynamodb, crashed and came back empty),
eviction (a Pod deleted while its process ran: the leader-for-life pattern's weakness),
clock-step (a clock bumped or strobed; a rate is not a step), fence-lie (the fence device
said off while the node ran), else own-logic (the candidate's protocol under faults on
candidates and the network). Two invalid runs with the same class and invalid codes are the
same find. --finds N searches on until N distinct finds (a repeat is counted); --accept
store-amnesia,eviction sets those classes aside: their runs are listed as set aside and the
search goes on for the candidate's own bugs.

A find is shrunk (drop faults and chain links, start links sooner after their events,
shorten faults and phases, fewer candidates; a smaller schedule is kept if it fails again
with one of the find's codes) for --shrink-budget, and its one-line 'splitbrain run' is run
--repro times.
Exit code: 1 when a violation was found, 0 when none was and some run proved its schedule
valid, 2 when no run proved anything (all unknown), 255 on a harness error (the search stops
after 3 runs in a row that could not run, e.g. no Docker engine), 64 on bad flags.

`

func runExplore(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("explore", stderr)
	rf := addRunFlags(fs, false)
	c := &rf.c
	f := addExploreFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, exploreHelp)
		fs.PrintDefaults()
	}
	problems := parseFlagsAll(fs, args)
	if len(problems) == 1 && problems[0] == flag.ErrHelp.Error() {
		fs.Usage()
		return exitUsage, flag.ErrHelp
	}
	problems = append(problems, rf.finish()...)
	setup, bad := f.check(fs, c)
	if problems = append(problems, bad...); len(problems) > 0 {
		return exitUsage, usageError{fmt.Sprintf("%d problem(s):\n  %s", len(problems), strings.Join(problems, "\n  "))}
	}
	pool := harness.NewStorePool()
	defer pool.Close(context.WithoutCancel(ctx))
	f.printStart(stdout, c, setup)
	t0 := time.Now()
	res, err := explore.Explore(ctx, f.options(c, setup, pool, stdout, stderr, t0))
	if err != nil && !errors.Is(err, explore.ErrHarnessErrors) {
		return exitUsage, usageError{err.Error()}
	}
	printExploreSummary(stdout, res, time.Since(t0))
	if err != nil { // the runs cannot run: the engine or the setup, not the flags
		return exitHarness, err
	}
	if res.Corpus != nil && *f.mode == explore.ModeGuided {
		fmt.Fprintf(stdout, "corpus: %d schedules, %d behaviour features over %d runs", len(res.Corpus.Entries), len(res.Corpus.Seen), res.Corpus.Tries)
		if *f.corpusPath != "" {
			fmt.Fprintf(stdout, " (saved to %s; --resume goes on from it)", *f.corpusPath)
		}
		fmt.Fprintln(stdout)
	}
	if *f.shrinkBudget > 0 || *f.repro > 0 {
		minimizeFinds(ctx, stdout, &res, func(t *explore.Try) (explore.Minimized, bool) {
			return minimizeFind(ctx, stdout, stderr, t, pool, *f.shrinkBudget, *f.shrinkTries, *f.repro)
		})
	}
	return exploreExit(ctx, res)
}

// exploreFlags are explore's own flags; the run's are addRunFlags'.
type exploreFlags struct {
	budget, shrinkBudget                          *time.Duration
	maxRuns, maxFaults, shrinkTries, finds, repro *int
	faults, mode, corpusPath, accept              *string
	seed                                          *int64
	verbose, resume                               *bool
}

func addExploreFlags(fs *flag.FlagSet) *exploreFlags {
	return &exploreFlags{
		budget:       fs.Duration("budget", 10*time.Minute, "stop starting runs after this long (a started run finishes)"),
		maxRuns:      fs.Int("runs", 0, "stop after this many runs (0: until the budget)"),
		faults:       fs.String("faults", "", "the vocabulary, comma-separated kinds or forms, e.g. pause,kill or pause:target=leader,partition:shape=halves (default: every kind, target and shape)"),
		maxFaults:    fs.Int("max-faults", 3, "faults per schedule: 1..N (guided chains: at most 3)"),
		seed:         fs.Int64("seed", 0, "seed of the draws (0 = from the clock); the same seed (and the same run outcomes) draws the same schedules"),
		verbose:      fs.Bool("v", false, "print each run's progress lines too"),
		mode:         fs.String("mode", explore.ModeGuided, "guided (causal fault chains, feedback from each run's behaviour, a corpus that is mutated) or random (independent random schedules, the search before issue 36)"),
		corpusPath:   fs.String("corpus", "", "guided: save the corpus (schedules that showed new behaviour, every feature seen) to FILE after every run"),
		resume:       fs.Bool("resume", false, "guided: load --corpus FILE and go on from it (its try count, its features, its schedules)"),
		shrinkBudget: fs.Duration("shrink-budget", 10*time.Minute, "shrink a find for at most this long (0: do not shrink)"),
		shrinkTries:  fs.Int("shrink-tries", 2, "tries per smaller schedule while shrinking; kept if one of them fails"),
		finds:        fs.Int("finds", 1, "stop after this many distinct finds (a find's cause class and invalid codes tell it apart; a repeat is counted, the search goes on)"),
		accept:       fs.String("accept", "", "cause classes to set aside and search on past, comma-separated: "+strings.Join(acceptableCauses(), ", ")+" (an invalid run of such a class is listed, not counted as a find)"),
		repro:        fs.Int("repro", 5, "re-run the shrunk one-line reproduction this many times and print its rate (0: do not)"),
	}
}

// exploreSetup is what the flags resolve to before the first try.
type exploreSetup struct {
	vocab              explore.Vocabulary
	accepted           []string
	corpus             *explore.Corpus // a resumed search's
	minNodes, maxNodes int
}

// check resolves explore's flags against the run's configuration c, listing every problem,
// and fills in the test name and the seed.
func (f *exploreFlags) check(fs *flag.FlagSet, c *harness.Config) (exploreSetup, []string) {
	var st exploreSetup
	var problems []string
	if *f.budget <= 0 && *f.maxRuns <= 0 {
		problems = append(problems, "--budget and --runs are both unset: give a time budget (e.g. --budget 10m) or a number of runs")
	}
	if *f.mode != explore.ModeGuided && *f.mode != explore.ModeRandom {
		problems = append(problems, fmt.Sprintf("--mode %q: want %s or %s", *f.mode, explore.ModeGuided, explore.ModeRandom))
	}
	if *f.resume && *f.corpusPath == "" {
		problems = append(problems, "--resume needs --corpus FILE (the corpus an earlier explore saved)")
	}
	if (*f.corpusPath != "" || *f.resume) && *f.mode == explore.ModeRandom {
		problems = append(problems, "--corpus/--resume belong to --mode guided: random draws do not use a corpus")
	}
	if *f.shrinkBudget < 0 || *f.repro < 0 || *f.shrinkTries < 1 {
		problems = append(problems, "--shrink-budget and --repro must be >= 0 and --shrink-tries >= 1 (e.g. --shrink-budget 10m --shrink-tries 2 --repro 5)")
	}
	if *f.finds < 1 || *f.finds > 20 {
		problems = append(problems, fmt.Sprintf("--finds %d: want 1..20 distinct finds", *f.finds))
	}
	var bad []string
	st.accepted, bad = parseAccept(*f.accept)
	problems = append(problems, bad...)
	if *f.maxRuns < 0 {
		problems = append(problems, fmt.Sprintf("--runs %d: want 0 (no limit) or more", *f.maxRuns))
	}
	var only []string
	if *f.faults != "" {
		only = strings.Split(*f.faults, ",")
	}
	var err error
	if st.vocab, err = explore.NewVocabulary(only, *f.maxFaults); err != nil {
		problems = append(problems, "--faults/--max-faults: "+err.Error())
	}
	if d, err := candidates.Registry.Lookup(c.Recipe); err == nil {
		st.vocab = st.vocab.WithSteps(d.Describe().Steps)
	}
	if c.TestName == "" {
		c.TestName = exploreTestName(c)
	}
	// The configuration without faults must be runnable; drawn schedules are checked per try.
	probe := *c
	probe.Nemesis = "none"
	if err := harness.CheckConfig(&probe); err != nil {
		problems = append(problems, strings.Split(err.Error(), "\n")...)
	}
	problems = append(problems, f.loadCorpus(c, &st)...)
	st.minNodes, st.maxNodes = 3, 5
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "nodes" {
			st.minNodes, st.maxNodes = c.Nodes, c.Nodes
		}
	})
	if *f.seed == 0 && st.corpus != nil {
		*f.seed = st.corpus.Seed
	}
	if *f.seed == 0 {
		*f.seed = time.Now().UnixNano()
	}
	return st, problems
}

// loadCorpus checks --corpus and, with --resume, loads it into st.
func (f *exploreFlags) loadCorpus(c *harness.Config, st *exploreSetup) []string {
	if *f.corpusPath == "" {
		return nil
	}
	// Refused before any try: the corpus is saved after each one by rename, which would
	// replace a device or FIFO named here (--corpus /dev/null) with a regular file.
	if err := runfile.CheckReplaceable(*f.corpusPath); err != nil {
		return []string{"--corpus " + err.Error()}
	}
	if !*f.resume {
		return nil
	}
	corpus, err := explore.LoadCorpus(*f.corpusPath)
	if err != nil {
		return []string{err.Error()}
	}
	if want := explore.CorpusTarget(*c); corpus.Target != want {
		return []string{fmt.Sprintf("--corpus %s was grown on %s, this search is on %s: give another --corpus file", *f.corpusPath, corpus.Target, want)}
	}
	st.corpus = corpus
	return nil
}

// printStart is the search's first line (and the resumed corpus's).
func (f *exploreFlags) printStart(stdout io.Writer, c *harness.Config, st exploreSetup) {
	limit := fmt.Sprintf("budget %v", *f.budget)
	if *f.maxRuns > 0 {
		limit += fmt.Sprintf(", at most %d runs", *f.maxRuns)
	}
	nodesText := fmt.Sprint(c.Nodes)
	if *f.mode == explore.ModeGuided && st.minNodes != st.maxNodes {
		nodesText = fmt.Sprintf("%d-%d", st.minNodes, st.maxNodes)
	}
	fmt.Fprintf(stdout, "splitbrain explore (%s): %s on %s, %s candidates, %v faults phase a run, %s, %d fault forms, seed %d\n",
		*f.mode, candidateDesc(c), c.Store, nodesText, c.FaultTime, limit, len(st.vocab.Atoms()), *f.seed)
	if st.corpus != nil {
		fmt.Fprintf(stdout, "resuming corpus %s: %d runs so far, %d schedules, %d behaviour features\n", *f.corpusPath, st.corpus.Tries, len(st.corpus.Entries), len(st.corpus.Seen))
	}
}

// options are the search's: every try on the pool's clusters, its progress and its lines.
func (f *exploreFlags) options(c *harness.Config, st exploreSetup, pool *harness.StorePool, stdout, stderr io.Writer, t0 time.Time) explore.Options {
	progressMode := harness.ProgressQuiet
	if *f.verbose {
		progressMode = harness.ProgressAuto
	}
	return explore.Options{
		Base: *c, Budget: *f.budget, MaxRuns: *f.maxRuns, Vocabulary: st.vocab, Seed: *f.seed,
		Mode: *f.mode, MinNodes: st.minNodes, MaxNodes: st.maxNodes, Corpus: st.corpus, CorpusPath: *f.corpusPath,
		Finds: *f.finds, Accept: st.accepted,
		Configure: func(i int, cfg *harness.Config) {
			cfg.StorePool = pool
			cfg.Progress, cfg.ProgressMode = io.Discard, progressMode
			if *f.verbose {
				cfg.Progress = stdout
			}
			cfg.Args = []string{"splitbrain", "explore", "(try " + fmt.Sprint(i) + ")"}
		},
		Started: func(i int, spec string, runSeed int64) {
			fmt.Fprintf(stdout, "try %d (%v elapsed): --nemesis '%s' --seed %d\n", i, time.Since(t0).Round(time.Second), spec, runSeed)
		},
		Each: func(t explore.Try) { printExploreTry(stdout, stderr, t) },
	}
}

// exploreExit is the exit code of a finished search: 1 a find, 0 none and some run valid, 2
// nothing shown, 255 interrupted.
func exploreExit(ctx context.Context, res explore.Result) (int, error) {
	switch {
	case res.Found != nil:
		return exitInvalid, nil
	case ctx.Err() != nil:
		return exitHarness, fmt.Errorf("interrupted after %d run(s); each was healed and torn down", len(res.Tries))
	case res.Tally()[harness.VerdictValid] == 0:
		return exitUnknown, nil
	}
	return exitValid, nil
}

// parseAccept reads --accept: the cause classes to set aside, and what is wrong with it.
func parseAccept(list string) (accepted, problems []string) {
	if list == "" {
		return nil, nil
	}
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		switch {
		case a == checkers.CauseOwnLogic:
			problems = append(problems, "--accept own-logic: that is the candidate's own bug, the thing searched for; accept only "+strings.Join(acceptableCauses(), ", "))
		case !slices.Contains(checkers.CauseClasses, a):
			problems = append(problems, fmt.Sprintf("--accept %q: not a cause class; want some of %s", a, strings.Join(acceptableCauses(), ", ")))
		default:
			accepted = append(accepted, a)
		}
	}
	return accepted, problems
}

// printExploreTry prints one finished try: its verdict, late writes, cause and, for a
// guided try, where its schedule came from; it renders the try's report first.
func printExploreTry(stdout, stderr io.Writer, t explore.Try) {
	if t.RunDir != "" {
		publishRun(t.RunDir, io.Discard, stderr)
	}
	label := shrink.Label(t.Verdict, t.Codes)
	if t.Err != nil {
		label = "harness error: " + errorText(t.Err)
	}
	fmt.Fprintf(stdout, "try %d: %s (%v, %d nodes) %s\n", t.N, label, t.Elapsed.Round(time.Second), t.Nodes, t.RunDir)
	if t.Late != nil {
		fmt.Fprintf(stdout, "  late writes, %s\n", t.Late)
	}
	if t.Cause != nil {
		fmt.Fprintf(stdout, "  cause, %s%s\n", t.Cause, findNote(t))
	}
	if t.Chain != nil {
		from := "fresh chain"
		if t.Parent > 0 {
			from = fmt.Sprintf("mutated try %d (%s)", t.Parent, strings.Join(t.Mutations, ", "))
		}
		fmt.Fprintf(stdout, "  %s; kinds this run: %s; %d new behaviour feature(s)%s\n", from, strings.Join(t.Swarm, ","), len(t.New), newFeatures(t.New))
	}
}

func printExploreSummary(w io.Writer, res explore.Result, elapsed time.Duration) {
	tally := res.Tally()
	var parts []string
	for _, k := range []string{harness.VerdictInvalid, harness.VerdictValid, harness.VerdictUnknown, "error"} {
		if tally[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", tally[k], k))
		}
	}
	kinds := map[string]int{}
	for _, t := range res.Tries {
		for _, item := range strings.Split(t.Spec, "; ") {
			k, _, _ := strings.Cut(item, ":")
			kinds[k]++
		}
	}
	var kindParts []string
	for k, n := range kinds {
		kindParts = append(kindParts, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(kindParts)
	fmt.Fprintf(w, "explored: %d run(s) in %v (%s); faults tried: %s; stopped: %s\n",
		len(res.Tries), elapsed.Round(time.Second), orText(strings.Join(parts, ", "), "none"),
		orText(strings.Join(kindParts, ", "), "none"), res.Stop)
	if res.Refused > 0 {
		fmt.Fprintf(w, "drawn but refused by this store/recipe (redrawn, never run): %d\n", res.Refused)
	}
	for _, t := range res.SetAside {
		fmt.Fprintf(w, "set aside (--accept %s): try %d, %s, %s\n", t.Cause.Class, t.N, shrink.Label(t.Verdict, t.Codes), t.RunDir)
	}
	for i, f := range res.Finds {
		which := ""
		if len(res.Finds) > 1 {
			which = fmt.Sprintf(" %d of %d", i+1, len(res.Finds))
		}
		fmt.Fprintf(w, "VIOLATION%s in try %d: %s\n  run:     %s\n  report:  %s\n  replay:  splitbrain replay %s --times 5\n  shrink:  splitbrain shrink %s\n",
			which, f.N, shrink.Label(f.Verdict, f.Codes), f.RunDir, filepath.Join(f.RunDir, "report.html"), f.RunDir, f.RunDir)
		if f.Cause != nil {
			fmt.Fprintf(w, "  cause:   %s\n", f.Cause)
			if n := res.Repeats[f.Cause.Key]; n > 0 {
				fmt.Fprintf(w, "  seen again in %d later run(s)\n", n)
			}
		}
		if f.Late != nil {
			fmt.Fprintf(w, "  late writes, %s\n", f.Late)
		}
	}
	if len(res.Finds) > 0 {
		return
	}
	if tally[harness.VerdictValid] == 0 {
		fmt.Fprintln(w, "no run proved anything (none came out valid): the search found nothing, and showed nothing safe")
	}
}

// acceptableCauses are the classes --accept takes: every one but the candidate's own logic.
func acceptableCauses() []string {
	return slices.DeleteFunc(slices.Clone(checkers.CauseClasses), func(c string) bool { return c == checkers.CauseOwnLogic })
}

// findNote says what the search made of an invalid try.
func findNote(t explore.Try) string {
	switch {
	case t.SetAside:
		return " — set aside (--accept " + t.Cause.Class + "): the search goes on"
	case t.Repeat:
		return " — the same cause as an earlier find: counted, the search goes on"
	}
	return ""
}

// newFeatures lists up to 4 features for the try line.
func newFeatures(fs []string) string {
	if len(fs) == 0 {
		return ""
	}
	show := fs[:min(4, len(fs))]
	more := ""
	if len(fs) > len(show) {
		more = fmt.Sprintf(", +%d", len(fs)-len(show))
	}
	return ": " + strings.Join(show, ", ") + more
}

// minimizeFinds shrinks and reproduces each find in turn. A find the shrink re-classed as
// another find's cause is that find: said once, and a later find it matched is not shrunk
// again (its cause has a line already).
func minimizeFinds(ctx context.Context, stdout io.Writer, res *explore.Result, minimize func(*explore.Try) (explore.Minimized, bool)) {
	dup := map[int]bool{}  // finds found to be another's cause
	skip := map[int]bool{} // later finds whose cause has a line already
	for i := range res.Finds {
		if ctx.Err() != nil {
			return
		}
		if skip[i] {
			continue
		}
		t := res.Finds[i]
		m, ok := minimize(&t)
		if !ok || !m.Reclassified(t.Cause) {
			continue
		}
		j := res.Regroup(i, m.Cause)
		switch {
		case j < 0:
		case j < i:
			dup[i] = true
			fmt.Fprintf(stdout, "  find %d (try %d) is find %d again (try %d, %s): one find\n", i+1, t.N, j+1, res.Finds[j].N, m.Cause.Class)
		case m.Race() || m.NotRunnable():
			// Same cause, but this line is no reproduction: the other find's run may shrink
			// to one (tooz-zookeeper s1: a 0/5 line stood for both finds).
			dup[j] = true
			fmt.Fprintf(stdout, "  find %d (try %d) has this cause too (%s): one find; shrunk in turn, for a line that reproduces\n", j+1, res.Finds[j].N, m.Cause.Class)
		default:
			dup[j], skip[j] = true, true
			fmt.Fprintf(stdout, "  find %d (try %d) has this cause too (%s): one find, not shrunk again\n", j+1, res.Finds[j].N, m.Cause.Class)
		}
	}
	if len(dup) > 0 {
		fmt.Fprintf(stdout, "distinct finds after the shrink: %d of %d\n", len(res.Finds)-len(dup), len(res.Finds))
	}
}

// minimizeFind shrinks the find and measures the one-line reproduction; ok is false when
// it could not be shrunk.
func minimizeFind(ctx context.Context, stdout, stderr io.Writer, f *explore.Try, pool *harness.StorePool, budget time.Duration, tries, repro int) (explore.Minimized, bool) {
	stdout = progress.PrintableWriter{W: stdout}
	name := replayTestName(filepath.Base(filepath.Dir(f.RunDir)), "-shrink")
	if budget > 0 {
		fmt.Fprintf(stdout, "shrinking try %d (budget %v, %d tries per step) ...\n", f.N, budget, tries)
	}
	m, err := explore.Minimize(ctx, f.RunDir, explore.MinimizeOptions{
		ShrinkBudget: budget, ShrinkTries: tries, Repro: repro,
		Configure: func(c *harness.Config) {
			c.TestName, c.Progress, c.ProgressMode, c.StorePool = name, io.Discard, harness.ProgressQuiet, pool
			c.Args = []string{"splitbrain", "explore", "(shrink of " + f.RunDir + ")"}
		},
		Step: func(st shrink.Step) {
			for _, o := range st.Tries {
				if o.RunDir != "" {
					publishRun(o.RunDir, io.Discard, stderr)
				}
			}
			verdict := "no failure: discarded"
			if st.Kept {
				verdict = "FAILED: kept"
			}
			fmt.Fprintf(stdout, "  shrink step %d: %s → %s; now %s\n", st.N, st.Move, verdict, st.Current)
		},
		Replayed: func(i int, o shrink.Outcome) {
			if o.RunDir != "" {
				publishRun(o.RunDir, io.Discard, stderr)
			}
			label := shrink.Label(o.Verdict, o.Codes)
			if o.Err != "" {
				label = "harness error: " + o.Err
			}
			fmt.Fprintf(stdout, "  reproduction %d/%d: %s (%v)\n", i, repro, label, o.Elapsed.Round(time.Second))
		},
	})
	if err != nil {
		fmt.Fprintf(stdout, "could not shrink the find: %v\n", err)
		return m, false
	}
	if m.Shrunk {
		fmt.Fprintf(stdout, "shrunk (%s after %d steps, %v): %s → %s\n", m.Shrink.Stopped, m.Shrink.Steps, m.Shrink.Elapsed.Round(time.Second), m.Shrink.Start.Size(), m.Shrink.Minimal.Size())
	}
	fmt.Fprintf(stdout, "REPRODUCE: %s\n", m.RunLine)
	fmt.Fprintf(stdout, "  reproduces %s of runs", m.Rate())
	if !m.Exact {
		fmt.Fprint(stdout, " (seeded targets: the line needs its --seed, which it carries)")
	}
	fmt.Fprintln(stdout)
	if m.Reclassified(f.Cause) {
		fmt.Fprintf(stdout, "  cause after the shrink, %s — not %s: the shrunk line failed without the fault that class rested on before the violation\n", m.Cause, f.Cause.Class)
	}
	if m.NotRunnable() {
		fmt.Fprintf(stdout, "  the line could not run (%s): it is not a reproduction; the find's own run is, splitbrain replay %s\n", m.Repro[0].Err, f.RunDir)
	}
	if m.Race() {
		fmt.Fprintf(stdout, "  a race: the line reproduced %s, under %d in 10; expect to run it several times (splitbrain replay RUN_DIR --times 10 measures it again)\n", m.Rate(), int(explore.RaceBelow*10))
	}
	return m, true
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// exploreTestName names the directory the tries go under: <store>-<recipe>-explore.
func exploreTestName(c *harness.Config) string {
	who := c.Recipe
	if who == "" {
		who = "candidate"
	}
	return c.Store + "-" + who + "-explore"
}
