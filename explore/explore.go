// Package explore searches for a violation: it runs one recipe again and again, each time
// with a fresh seed and a fault schedule composed from the nemesis's own vocabulary (kinds,
// targets, partition shapes, durations relative to the TTL), and stops at the first invalid
// run. Every try is a normal run directory, so the find replays and shrinks like any other.
//
// Two modes. "random" draws independent schedules (faults at random times or on a
// candidate event). "guided" (the default) composes causal chains of up to three faults,
// each started on a protocol event or on the previous fault's start or end, computes a
// behaviour signature of every run from its history, keeps the schedules that showed
// behaviour no run had shown in a corpus, and mutates them (greybox search, as Mallory does
// for Jepsen); each run may use only a random subset of the fault kinds (swarm testing).
package explore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
	"github.com/splitbrain-chaos/splitbrain/shrink"
)

// Options says what to explore and for how long.
type Options struct {
	// Base is the run to explore: store, recipe or candidate, nodes, timings, resource mode.
	// Its Nemesis and Seed are drawn per try.
	Base harness.Config
	// Budget: no try starts once this much time has passed (a try that started runs to its
	// end, so the whole search may exceed it by one run).
	Budget time.Duration
	// MaxRuns stops after this many tries (0: until the budget).
	MaxRuns int
	// Vocabulary is what schedules are drawn from (see NewVocabulary).
	Vocabulary Vocabulary
	// Seed drives the draws: the same seed draws the same schedules and run seeds.
	Seed int64
	// Configure adjusts each try's config (test name, progress output) before it runs.
	Configure func(i int, c *harness.Config)
	// Started and Each report each try as it starts and ends.
	Started func(i int, spec string, seed int64)
	Each    func(Try)

	// Mode is ModeGuided (default) or ModeRandom.
	Mode string
	// MinNodes..MaxNodes: the candidate counts guided chains draw from (0: 3..5).
	MinNodes, MaxNodes int
	// Corpus is what a guided search grows and mutates (nil: a fresh one); a loaded corpus
	// resumes where it stopped. CorpusPath, when set, receives it after every try.
	Corpus     *Corpus
	CorpusPath string
	// Finds: the search stops after this many distinct finds (0: 1). Two invalid runs are
	// the same find when their causes (checkers.Cause.Key: the class and the invalid codes)
	// are the same; a repeat is counted, not stopped at.
	Finds int
	// Accept lists cause classes (checkers.CauseClasses) the user has decided to live with:
	// an invalid run of such a class is set aside, counted, and the search goes on.
	Accept []string
	// Runner runs one try (nil: a real harness run whose history gives the signature);
	// tests give a fake one.
	Runner func(ctx context.Context, cfg harness.Config, i int, spec string) Try
	// now is the search's clock (nil: time.Now); tests give one that the runner advances.
	now func() time.Time
}

// Search modes.
const (
	ModeGuided = "guided"
	ModeRandom = "random"
)

// Try is one run of the search.
type Try struct {
	N       int
	Spec    string // the drawn --nemesis spec
	Seed    int64  // the run's --seed
	RunDir  string
	Verdict string
	Codes   []string
	Elapsed time.Duration
	Err     error // a harness failure (the search goes on; the try counts as proving nothing)

	// Signature is the run's behaviour (BehaviourSignature of its history).
	Signature Signature
	// Late attributes the writes that made an invalid run invalid (nil for other verdicts,
	// or when results.json could not be read).
	Late *checkers.LateWrites
	// Cause classes an invalid run (nil for other verdicts, or when results.json could not
	// be read: such a find counts as own-logic). SetAside: its class was accepted;
	// Repeat: an earlier find had the same cause key.
	Cause    *checkers.Cause
	SetAside bool
	Repeat   bool
	// New are the signature's features no earlier try of the search had shown.
	New []string
	// Guided tries: the chain run, the swarm's kinds, and where it came from (Parent is the
	// corpus entry's try, 0 for a fresh draw; Mutations what was changed).
	Chain     *Chain
	Swarm     []string
	Parent    int
	Mutations []string
	Nodes     int
}

// Stop reasons.
const (
	StopFound       = "found"          // a run came out invalid
	StopBudget      = "budget"         // the time budget ran out
	StopRuns        = "runs"           // MaxRuns tries done
	StopInterrupted = "interrupted"    // ctx was cancelled
	StopErrors      = "harness-errors" // MaxErrorsInARow tries in a row could not run
)

// MaxErrorsInARow stops a search, as it stops a replay: that many tries in a row that could
// not run (no Docker engine, a setup that always fails) say the next ones will not either,
// and each leaves a run directory behind (13 a second with the engine down).
const MaxErrorsInARow = shrink.MaxReplayErrorsInARow

// ErrHarnessErrors matches (errors.Is) the error of a search stopped after MaxErrorsInARow
// tries in a row that could not run.
var ErrHarnessErrors = errors.New("explore: runs in a row could not run")

// errorsInARow is that error; it unwraps to the last try's error.
type errorsInARow struct {
	n    int
	last error
}

func (e errorsInARow) Error() string {
	return fmt.Sprintf("explore: %d runs in a row could not run, so no more are started (last error: %v)", e.n, e.last)
}
func (e errorsInARow) Is(target error) bool { return target == ErrHarnessErrors }
func (e errorsInARow) Unwrap() error        { return e.last }

// Result is what the search tried and why it stopped.
type Result struct {
	Tries []Try
	// Found is the first find (an invalid try whose cause was not accepted), nil when none was.
	Found *Try
	// Finds are the distinct finds in the order found (Found is the first); SetAside the
	// invalid tries whose cause class was accepted; Repeats counts further invalid tries per
	// cause key of a find.
	Finds    []Try
	SetAside []Try
	Repeats  map[string]int
	// Refused counts drawn schedules the run's configuration refused before anything started
	// (e.g. store-leader on a store without one); they were redrawn, never run.
	Refused int
	Stop    string
	// Corpus is the search's corpus at the end (its Seen features are the behaviour covered).
	Corpus *Corpus
}

// Tally counts the tries by verdict ("error" for harness failures).
func (r Result) Tally() map[string]int {
	out := map[string]int{}
	for _, t := range r.Tries {
		if t.Err != nil {
			out["error"]++
			continue
		}
		out[t.Verdict]++
	}
	return out
}

// storeCrashShare is the share of a guided search's time that tries crashing store nodes
// may take before the draws spare the store.
const storeCrashShare = 1.0 / 3

// maxRefusals bounds the redraws in a row before the vocabulary is declared useless for
// this configuration (so a search never spins without running anything).
const maxRefusals = 200

// Explore runs the search. It returns an error when no try could start at all (bad options,
// or a vocabulary the configuration refuses entirely), and one wrapping ErrHarnessErrors,
// with the tries so far, when MaxErrorsInARow tries in a row could not run; a harness
// failure of a single try is recorded in its Try and the search goes on.
func Explore(ctx context.Context, opt Options) (Result, error) {
	opt, err := withDefaults(opt)
	if err != nil {
		return Result{}, err
	}
	s := newSearch(opt)
	for {
		if stop := s.stopBefore(ctx); stop != "" {
			s.res.Stop = stop
			return s.res, nil
		}
		n := s.corpus.Tries + 1
		cfg, spec, meta, err := s.draw(n)
		if err != nil {
			return s.res, err
		}
		if opt.Started != nil {
			opt.Started(n, spec, cfg.Seed)
		}
		t := opt.Runner(ctx, cfg, n, spec)
		t.N, t.Spec, t.Seed, t.Nodes = n, spec, cfg.Seed, cfg.Nodes
		t.Chain, t.Swarm, t.Parent, t.Mutations = meta.Chain, meta.Swarm, meta.Parent, meta.Mutations
		if err := s.learn(ctx, &t); err != nil {
			return s.res, err
		}
		s.res.Tries = append(s.res.Tries, t)
		if opt.Each != nil {
			opt.Each(t)
		}
		if s.tally(t) {
			s.res.Stop = StopFound
			return s.res, nil
		}
		if err := s.countErrors(ctx, t); err != nil {
			s.res.Stop = StopErrors
			return s.res, err
		}
	}
}

// withDefaults checks a search's options and fills in their defaults.
func withDefaults(opt Options) (Options, error) {
	if len(opt.Vocabulary.atoms) == 0 {
		return opt, errors.New("explore: empty fault vocabulary")
	}
	if opt.Budget <= 0 && opt.MaxRuns <= 0 {
		return opt, errors.New("explore: give a time budget or a number of runs")
	}
	switch opt.Mode {
	case "":
		opt.Mode = ModeGuided
	case ModeGuided, ModeRandom:
	default:
		return opt, fmt.Errorf("explore: unknown mode %q: want %s or %s", opt.Mode, ModeGuided, ModeRandom)
	}
	if opt.Vocabulary.MaxFaults < 1 {
		opt.Vocabulary.MaxFaults = 1
	}
	if opt.Base.TTL <= 0 {
		// Durations are drawn as TTL multiples; the run applies the same default.
		opt.Base.TTL = harness.DefaultTTL
	}
	if opt.MinNodes <= 0 {
		opt.MinNodes, opt.MaxNodes = 3, 5
	}
	if opt.Runner == nil {
		opt.Runner = runTry
	}
	if opt.now == nil {
		opt.now = time.Now
	}
	return opt, nil
}

// search is one search's state between its tries.
type search struct {
	opt             Options
	res             Result
	corpus          *Corpus
	rng             *rand.Rand
	guide, unfenced Guide // unfenced: the guide without fence faults
	start           time.Time
	inARow          int           // tries in a row that could not run
	crashSpent      time.Duration // in tries that crashed store nodes
}

func newSearch(opt Options) *search {
	corpus := opt.Corpus
	if corpus == nil {
		corpus = NewCorpus(CorpusTarget(opt.Base), opt.Seed)
	}
	s := &search{opt: opt, corpus: corpus, start: opt.now()}
	s.res.Corpus = corpus
	// A resumed search continues on its own stream: the same seed and corpus draw the same
	// schedules again, and a resume does not repeat the draws of the first session.
	// The target is mixed in too, so that one seed given to searches of several candidates
	// draws an independent sequence for each (results across candidates are then
	// independent samples, not the same schedules again).
	s.rng = rand.New(rand.NewPCG(uint64(opt.Seed)^targetHash(CorpusTarget(opt.Base)), 0x5eed^uint64(corpus.Tries)<<20))
	s.guide = Guide{Vocabulary: opt.Vocabulary, MinNodes: opt.MinNodes, MaxNodes: opt.MaxNodes}
	if st, ok := storekinds.Lookup(opt.Base.Store); ok {
		s.guide.VolatileStore = st.Volatile
	}
	if opt.Mode == ModeGuided {
		s.guide.Vocabulary = runnableAtoms(opt)
	}
	s.unfenced = s.guide
	s.unfenced.Vocabulary.atoms = slices.DeleteFunc(slices.Clone(s.guide.Vocabulary.atoms), func(a atom) bool { return a.fence })
	if len(s.unfenced.Vocabulary.atoms) == 0 {
		s.unfenced = s.guide
	}
	return s
}

// stopBefore says why the search ends before its next try ("" = it goes on).
func (s *search) stopBefore(ctx context.Context) string {
	switch {
	case ctx.Err() != nil:
		return StopInterrupted
	case s.opt.MaxRuns > 0 && len(s.res.Tries) >= s.opt.MaxRuns:
		return StopRuns
	case s.opt.Budget > 0 && s.opt.now().Sub(s.start) >= s.opt.Budget:
		return StopBudget
	}
	return ""
}

// draw picks try n's configuration: a random schedule, or a guided chain.
func (s *search) draw(n int) (harness.Config, string, Try, error) {
	if s.opt.Mode == ModeRandom {
		cfg, spec, err := drawRunnable(s.rng, s.opt, n, &s.res.Refused)
		return cfg, spec, Try{}, err
	}
	g := s.guide
	if s.corpus.Seen[FeatureFenceRequested] == 0 {
		// A fence fault acts only on a candidate's request to the fence device; until a
		// run showed one, it cannot change anything.
		g = s.unfenced
	}
	// Crashes of an in-memory store cost a store restart each (dynalite: 30-50 s); once the
	// tries with one took over storeCrashShare of the search's time, the next draws spare
	// the store, so they cannot eat the budget.
	g.SpareStore = g.VolatileStore && s.crashSpent > time.Duration(float64(s.opt.now().Sub(s.start))*storeCrashShare)
	return drawGuided(s.rng, s.opt, g, s.corpus, n, &s.res.Refused)
}

// learn reads a finished try: whether an invalid one is set aside or repeats a find, and
// what it adds to the corpus (saved when the search keeps one on disk).
func (s *search) learn(ctx context.Context, t *Try) error {
	if t.Err == nil && t.Verdict == harness.VerdictInvalid {
		t.SetAside = slices.Contains(s.opt.Accept, causeKeyClass(*t))
		t.Repeat = !t.SetAside && slices.ContainsFunc(s.res.Finds, func(f Try) bool { return sameFind(f, *t) })
	}
	if t.Chain != nil && slices.ContainsFunc(t.Chain.Links, func(l Link) bool { return s.guide.atomOf(l).storeCrash() }) {
		s.crashSpent += t.Elapsed
	}
	if t.Err != nil || ctx.Err() != nil {
		return nil
	}
	c := s.corpus
	c.Tries++
	t.New = c.Observe(t.Signature)
	// A schedule none of whose faults took effect showed nothing about faults. One that came
	// nearer a violation than any before is kept even without a new feature.
	near := t.Signature.Nearness()
	closer := near > c.BestNear
	c.BestNear = max(c.BestNear, near)
	if (len(t.New) > 0 || closer) && t.Chain != nil && slices.ContainsFunc(t.Signature, func(f string) bool { return strings.HasPrefix(f, "fault:") }) {
		c.Add(Entry{Chain: *t.Chain, Spec: t.Spec, Signature: t.Signature, New: t.New, Try: t.N, Verdict: t.Verdict, RunDir: t.RunDir})
	}
	if s.opt.CorpusPath != "" {
		return c.Save(s.opt.CorpusPath)
	}
	return nil
}

// tally counts an invalid try as a find, a repeat of one or a run set aside, and reports
// whether the search has the finds it was asked for.
func (s *search) tally(t Try) bool {
	if t.Err != nil || t.Verdict != harness.VerdictInvalid {
		return false
	}
	res := &s.res
	key := causeKey(t)
	if i := slices.IndexFunc(res.Finds, func(f Try) bool { return sameFind(f, t) }); i >= 0 {
		key = causeKey(res.Finds[i]) // counted under the find it repeats
	}
	switch {
	case t.SetAside:
		res.SetAside = append(res.SetAside, t)
	case t.Repeat:
		if res.Repeats == nil {
			res.Repeats = map[string]int{}
		}
		res.Repeats[key]++
	default:
		res.Finds = append(res.Finds, t)
		res.Found = &res.Finds[0]
	}
	return len(res.Finds) >= max(s.opt.Finds, 1)
}

// countErrors ends the search when MaxErrorsInARow tries in a row could not run.
func (s *search) countErrors(ctx context.Context, t Try) error {
	switch {
	case t.Err == nil || ctx.Err() != nil: // an interrupted try says nothing of the next
		s.inARow = 0
	case s.inARow+1 >= MaxErrorsInARow:
		return errorsInARow{n: s.inARow + 1, last: t.Err}
	default:
		s.inARow++
	}
	return nil
}

// targetHash is FNV-1a of what the search runs on.
func targetHash(target string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(target))
	return h.Sum64()
}

// causeKey tells distinct finds apart: the cause's key, or the verdict codes under
// own-logic when the results could not be read.
func causeKey(t Try) string {
	if t.Cause != nil {
		return t.Cause.Key
	}
	codes := slices.Clone(t.Codes)
	slices.Sort(codes)
	return checkers.CauseOwnLogic + "|" + strings.Join(codes, ",")
}

// sameFind says b is the find a again: the same cause class and at least one invalid
// reason code in common. The codes beside the bug's own vary from run to run (a zombie's
// stale write is also an interleaving when it lands after its successor's first write; a
// duplicate token is also an interleaving when both holders write), and keyed on the exact
// set one bug was reported as several finds (issue 48: etcd-lock-unfenced's "token-duplicate"
// and "interleaving,token-duplicate", two finds of one search, each shrunk and reproduced).
func sameFind(a, b Try) bool {
	ca, codesA, _ := strings.Cut(causeKey(a), "|")
	cb, codesB, _ := strings.Cut(causeKey(b), "|")
	if ca != cb {
		return false
	}
	if codesA == "" || codesB == "" {
		return codesA == codesB
	}
	bs := strings.Split(codesB, ",")
	return slices.ContainsFunc(strings.Split(codesA, ","), func(c string) bool { return slices.Contains(bs, c) })
}

// Regroup takes find i's cause as read again after its shrink (Minimized.Cause) and says
// which other find it turned out to be: that find's index, or -1. A find is classed by its
// schedule; once the shrink dropped the fault the class rested on, it may be another find's
// bug (issue 48: zk-suspended's clock-step find, re-classed own-logic after the shrink
// dropped the clock bump, stayed a second find beside the own-logic one). The find keeps the
// new cause, so a later find re-classed the same way is matched to it too.
func (r *Result) Regroup(i int, after *checkers.Cause) int {
	if after == nil || i < 0 || i >= len(r.Finds) {
		return -1
	}
	r.Finds[i].Cause = after
	for j, f := range r.Finds {
		if j != i && sameFind(f, r.Finds[i]) {
			return j
		}
	}
	return -1
}

func causeKeyClass(t Try) string {
	if t.Cause != nil {
		return t.Cause.Class
	}
	return checkers.CauseOwnLogic
}

// runnableAtoms leaves out stale-leader targets and the atoms this configuration refuses
// on their own (evict off
// the kubernetes store, store-leader on a store without one, clock skew of a server that
// cannot be skewed), so swarms and mutations do not spend their draws on them. When it
// would leave nothing, the vocabulary stays whole and the refusals are reported per draw.
func runnableAtoms(opt Options) Vocabulary {
	v := opt.Vocabulary
	var keep []atom
	for _, a := range v.atoms {
		if a.target == nemesis.TargetStaleLeader && len(v.atoms) > 1 {
			// Resolves only while a zombie exists, which is the bug already; otherwise the
			// fault fails and the run is unknown after its whole timeout.
			continue
		}
		cfg := opt.Base
		cfg.Plan, cfg.Seed, cfg.Until = nil, 1, GuidedUntil(cfg.TTL)
		cfg.Nodes = opt.MaxNodes
		cfg.Nemesis = a.String() + ",on=" + nemesis.EventWrite + ":3,count=1,for=1xTTL"
		if harness.CheckConfig(&cfg) == nil {
			keep = append(keep, a)
		}
	}
	if len(keep) > 0 {
		v.atoms = keep
	}
	return v
}

// CorpusTarget names what a corpus was grown on.
func CorpusTarget(c harness.Config) string {
	who := c.Recipe
	switch {
	case c.CandidateCmd != "":
		who = "cmd:" + c.CandidateCmd
	case c.CandidateImage != "":
		who = "image:" + c.CandidateImage
	}
	mode := c.ResourceMode
	if mode == "" { // not validated yet: the mode the run will get
		mode = harness.DefaultResourceMode
		if c.CandidateCmd == "" && c.CandidateImage == "" {
			mode = harness.DefaultResourceFor(c.Recipe)
		}
	}
	return fmt.Sprintf("%s/%s/%s", c.Store, who, mode)
}

// GuidedUntil ends a guided run's faults phase once the chain ran and healed, a leader is
// back at work and a TTL has passed since the last heal, so that what the chain did to a
// lease can show (measured: a run that ended 0.1 s after a store majority restarted, on the
// old leader's third write, never saw the waiter take the lock on the empty servers; the
// faults phase length is then only its timeout), or once the chain
// stalled: the links that ran healed, a leader is back, and for 3xTTL no fault started or
// ended, so the links left wait on an event their faults did not cause (an election, a
// step-down). Such a run is unknown either way; measured, each one waited out its whole
// timeout before (2 min a run at TTL 10 s: three of a search's first four runs).
func GuidedUntil(ttl time.Duration) string {
	if ttl <= 0 {
		ttl = harness.DefaultTTL
	}
	return fmt.Sprintf("faults,settle=%v,stall=%v", ttl, 3*ttl)
}

// FreshRuns is how many runs a new corpus draws fresh chains before it mutates any: every
// feature is new in the first runs, so a corpus trusted at once mutates its first, often
// incidental, finds over and over (measured: docs/performance.md "Guided explore").
const FreshRuns = 6

// drawGuided composes the next chain: a fresh one for the first FreshRuns runs, while the
// corpus is empty, and one time in two after that, else a mutation of a corpus entry;
// redrawn until the configuration accepts it.
func drawGuided(rng *rand.Rand, opt Options, g Guide, corpus *Corpus, i int, refused *int) (harness.Config, string, Try, error) {
	var last error
	for range maxRefusals {
		var meta Try
		meta.Swarm = g.Swarm(rng)
		var ch Chain
		var parent *Entry
		if corpus.Tries >= FreshRuns && rng.IntN(2) != 0 {
			parent = corpus.pick(rng.IntN, meta.Swarm)
		}
		if parent != nil {
			ch, meta.Mutations = g.Mutate(rng, parent.Chain, meta.Swarm)
			meta.Parent = parent.Try
		} else {
			ch = g.Draw(rng, meta.Swarm)
		}
		meta.Chain = &ch
		if !ch.Sane() || (g.SpareStore && slices.ContainsFunc(ch.Links, func(l Link) bool { return g.atomOf(l).storeCrash() })) {
			*refused++
			continue
		}
		cfg := opt.Base
		cfg.Plan = nil
		cfg.Nodes = ch.Nodes
		cfg.Nemesis = ch.Spec()
		if cfg.Until == "" {
			cfg.Until = GuidedUntil(cfg.TTL)
		}
		cfg.Seed = rng.Int64N(1<<53) + 1
		if opt.Configure != nil {
			opt.Configure(i, &cfg)
		}
		probe := cfg
		if last = harness.CheckConfig(&probe); last == nil {
			return cfg, cfg.Nemesis, meta, nil
		}
		*refused++
	}
	return harness.Config{}, "", Try{}, fmt.Errorf("explore: %d composed schedules in a row were refused by this store/recipe; narrow --faults to faults it takes (last refusal: %v)", maxRefusals, last)
}

// drawRunnable draws schedules until the configuration accepts one.
func drawRunnable(rng *rand.Rand, opt Options, i int, refused *int) (harness.Config, string, error) {
	var last error
	for range maxRefusals {
		cfg := opt.Base
		cfg.Plan = nil
		cfg.Nemesis = opt.Vocabulary.Draw(rng, cfg.TTL, cfg.FaultTime)
		cfg.Seed = rng.Int64N(1<<53) + 1
		if opt.Configure != nil {
			opt.Configure(i, &cfg)
		}
		probe := cfg
		if last = harness.CheckConfig(&probe); last == nil {
			return cfg, cfg.Nemesis, nil
		}
		*refused++
	}
	return harness.Config{}, "", fmt.Errorf("explore: %d drawn schedules in a row were refused by this store/recipe; narrow --faults to faults it takes (last refusal: %v)", maxRefusals, last)
}

func runTry(ctx context.Context, cfg harness.Config, i int, spec string) (t Try) {
	t = Try{N: i, Spec: spec, Seed: cfg.Seed}
	t0 := time.Now()
	out, err := harness.Run(ctx, cfg)
	t.Elapsed = time.Since(t0)
	if out != nil {
		t.RunDir = out.RunDir
	}
	var evs []history.Event
	if t.RunDir != "" {
		var herr error
		if evs, _, herr = history.ReadFile(filepath.Join(t.RunDir, harness.HistoryFile)); herr == nil {
			t.Signature = BehaviourSignature(evs, cfg.TTL)
		}
	}
	defer func() { // on every return below, once the verdict is read
		if t.Verdict == harness.VerdictInvalid && evs != nil {
			if res, err := checkers.ReadResults(filepath.Join(t.RunDir, harness.ResultsFile)); err == nil {
				if t.Late = res.LateWrites; t.Late == nil { // results.json of an older check
					late := checkers.AttributeLateWrites(res, evs)
					t.Late = &late
				}
				if t.Cause = res.Cause; t.Cause == nil {
					c := checkers.AttributeCause(res)
					t.Cause = &c
				}
			}
		}
	}()
	if err != nil {
		t.Err = err
		// A proof recorded before the failure stays a proof.
		if out != nil && out.Verdict == harness.VerdictInvalid && t.RunDir != "" {
			t.Verdict, t.Codes, _ = shrink.ReadVerdict(t.RunDir)
			if t.Verdict == harness.VerdictInvalid {
				t.Err = nil
			}
		}
		return t
	}
	t.Verdict, t.Codes, t.Err = shrink.ReadVerdict(t.RunDir)
	return t
}

// atom is one fault shape the vocabulary can draw: a kind with a target or a partition shape.
type atom struct {
	kind, target, shape string
	// proxy and network: the kind's traits; one schedule cannot mix them (with the proxy in
	// the path, iptables rules between candidates and store would miss the traffic).
	proxy, network bool
	// triggered: the fault starts on a candidate's event (on=) and hits that candidate.
	triggered bool
	// fence: the kind acts on the run's fence device, i.e. only on a candidate's request.
	fence bool
	// crash: the kind crashes its target (kill): for= is how long it stays down.
	crash bool
	// params are further key=value pairs of the form (clockAhead), "" for the kind's defaults.
	params string
}

func (a atom) String() string {
	s := a.kind + ":"
	if a.shape != "" {
		s += "shape=" + a.shape
	} else {
		s += "target=" + a.target
	}
	if a.params != "" {
		s += "," + a.params
	}
	return s
}

// clockAhead is the clock kind's second form: its default steps a clock back (-3xTTL), which
// makes a holder write expiries already past; a clock stepped ahead makes a waiter judge a
// live lease expired, the failure of every lock that compares timestamps across nodes
// (issue 48: dynamodb-wallclock's bug is a fast waiter clock, which no draw could make).
const clockAhead = "delta=+3xTTL"

// Vocabulary is the set of single faults a schedule is composed from.
type Vocabulary struct {
	atoms []atom
	// events are the on= values a triggered atom draws from: the candidate events, plus the
	// recipe's declared steps (WithSteps).
	events []string
	// MaxFaults: a schedule has 1..MaxFaults faults.
	MaxFaults int
}

// WithSteps adds the recipe's declared steps (on=step:NAME) to the events triggered faults
// draw from; a recipe declares them in its registry entry.
func (v Vocabulary) WithSteps(steps []string) Vocabulary {
	v.events = slices.Clone(v.events)
	for _, st := range steps {
		v.events = append(v.events, nemesis.EventStep+":"+st)
	}
	return v
}

// Atoms lists the vocabulary's single faults, e.g. "pause:target=leader".
func (v Vocabulary) Atoms() []string {
	var out []string
	for _, a := range v.atoms {
		out = append(out, a.String())
	}
	return out
}

// NewVocabulary builds the vocabulary from the nemesis's registry: every target each kind
// accepts (node:NAME aside: targets are drawn by role) and, for partitions, every shape.
// only narrows it: each entry is a kind ("pause") or one atom ("pause:target=leader",
// "partition:shape=halves"); nil means everything.
func NewVocabulary(only []string, maxFaults int) (Vocabulary, error) {
	if maxFaults < 1 {
		return Vocabulary{}, fmt.Errorf("at most %d faults per schedule: want at least 1", maxFaults)
	}
	every := allAtoms()
	events := []string{nemesis.EventElected, nemesis.EventCampaigning, nemesis.EventWrite,
		nemesis.EventWrite + ":3", nemesis.EventSteppedDown}
	if len(only) == 0 {
		return Vocabulary{atoms: every, events: events, MaxFaults: maxFaults}, nil
	}
	v := Vocabulary{events: events, MaxFaults: maxFaults}
	for _, want := range only {
		want = strings.TrimSpace(want)
		var hit []atom
		for _, a := range every {
			if a.kind == want || a.String() == want {
				hit = append(hit, a)
			}
		}
		if len(hit) == 0 {
			return Vocabulary{}, unknownAtom(want, every)
		}
		for _, a := range hit {
			if !slices.Contains(v.atoms, a) {
				v.atoms = append(v.atoms, a)
			}
		}
	}
	return v, nil
}

func allAtoms() []atom {
	var out []atom
	for _, k := range nemesis.Kinds() {
		if hasParam(k, "shape") {
			for _, s := range nemesis.Shapes() {
				out = append(out, atom{kind: k.Name, shape: s.Name, proxy: k.Proxy, network: k.Network})
			}
			continue
		}
		forms := []string{""}
		if k.Name == "clock" {
			forms = append(forms, clockAhead)
		}
		for _, p := range forms {
			for _, t := range k.Targets {
				if !strings.Contains(t, ":") {
					out = append(out, atom{kind: k.Name, target: t, proxy: k.Proxy, network: k.Network, fence: k.Fence, crash: k.Crash, params: p})
				}
			}
			if slices.Contains(k.Targets, nemesis.TargetLeader) {
				out = append(out, atom{kind: k.Name, target: nemesis.TargetTrigger, proxy: k.Proxy, network: k.Network, triggered: true, crash: k.Crash, params: p})
			}
		}
	}
	return out
}

func unknownAtom(want string, every []atom) error {
	kind, _, _ := strings.Cut(want, ":")
	if why, ok := nemesis.Unsupported()[kind]; ok {
		return fmt.Errorf("fault kind %q is not offered here: %s", kind, why)
	}
	if slices.Contains(nemesis.KindNames(), kind) {
		var forms []string
		for _, a := range every {
			if a.kind == kind {
				forms = append(forms, a.String())
			}
		}
		return fmt.Errorf("%q is not in the vocabulary; %s takes: %s", want, kind, strings.Join(forms, ", "))
	}
	return fmt.Errorf("unknown fault kind %q; give a kind (%s) or one of its forms such as pause:target=leader", want, strings.Join(nemesis.KindNames(), ", "))
}

func hasParam(t nemesis.Traits, key string) bool {
	return slices.ContainsFunc(t.Params, func(p nemesis.ParamInfo) bool { return p.Key == key })
}

// Draw composes one schedule: 1..MaxFaults faults, each held for 1–4×TTL, either once at a
// random offset of the faults phase or repeatedly with 1–3×TTL between occurrences. Lengths
// are clamped so every fault fits the faults phase. A schedule never mixes a proxy fault with
// an iptables one (the nemesis refuses that mix).
func (v Vocabulary) Draw(rng *rand.Rand, ttl, faultPhase time.Duration) string {
	n := 1 + rng.IntN(v.MaxFaults)
	var parts []string
	var proxy, network bool
	for range n {
		var fits []atom
		for _, a := range v.atoms {
			if !(a.proxy && network) && !(a.network && proxy) {
				fits = append(fits, a)
			}
		}
		a := fits[rng.IntN(len(fits))]
		proxy, network = proxy || a.proxy, network || a.network
		when := timing(rng, ttl, faultPhase)
		if a.triggered {
			when = v.trigger(rng, ttl, faultPhase)
		}
		parts = append(parts, a.String()+","+when)
	}
	return strings.Join(parts, "; ")
}

// trigger draws on=, after= and for= for a fault that starts on a candidate's event: after
// is 0, a few milliseconds (inside a step's window) or up to TTL/2.
func (v Vocabulary) trigger(rng *rand.Rand, ttl, faultPhase time.Duration) string {
	hold := timing(rng, ttl, faultPhase)
	hold, _, _ = strings.Cut(hold, ",")
	afters := []time.Duration{0, 10 * time.Millisecond, 30 * time.Millisecond, ttl / 4, ttl / 2}
	after := afters[rng.IntN(len(afters))].Round(time.Millisecond)
	return fmt.Sprintf("on=%s,after=%v,%s", v.events[rng.IntN(len(v.events))], after, hold)
}

// timing draws for= and at= or every= for one fault.
func timing(rng *rand.Rand, ttl, faultPhase time.Duration) string {
	if ttl <= 0 || faultPhase <= 0 {
		return "for=1xTTL"
	}
	k := 1 + rng.IntN(4)
	for k > 1 && time.Duration(k)*ttl >= faultPhase {
		k--
	}
	hold := time.Duration(k) * ttl
	forKey := fmt.Sprintf("for=%dxTTL", k)
	if hold >= faultPhase {
		hold = faultPhase / 2
		forKey = "for=" + hold.Round(time.Millisecond).String()
	}
	if rng.IntN(2) == 0 {
		gap := time.Duration(1+rng.IntN(3)) * ttl
		if hold+gap < faultPhase {
			return fmt.Sprintf("%s,every=%v", forKey, (hold + gap).Round(time.Millisecond))
		}
	}
	slack := faultPhase - hold
	at := time.Duration(rng.Int64N(int64(slack)/int64(time.Millisecond)+1)) * time.Millisecond
	return fmt.Sprintf("%s,at=%v", forKey, at)
}
