package explore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// A history in which c1 leads, is paused, c2 is elected during the pause, the unfenced
// resource takes c1's stale write after the pause, a waiter starts over while c2 leads,
// and c2 steps down with nobody elected after it.
func zombieHistory() []history.Event {
	var evs []history.Event
	seq := int64(0)
	at := func(ms int64, e history.Event) {
		seq++
		e.Seq, e.T, e.V = seq, ms*1e6, history.Version
		evs = append(evs, e)
	}
	cand := func(kind history.Kind, node string) history.Event {
		return history.Event{Source: history.SourceCandidate, Kind: kind, Node: node}
	}
	at(0, history.Event{Source: history.SourceHarness, Kind: history.KindPhase, Phase: history.PhaseWarmup})
	at(1, cand(history.KindCampaigning, "c1"))
	at(2, cand(history.KindCampaigning, "c2"))
	at(3, cand(history.KindCampaigning, "c3"))
	e := cand(history.KindElected, "c1")
	e.Token = 1
	at(10, e)
	at(100, history.Event{Source: history.SourceHarness, Kind: history.KindPhase, Phase: history.PhaseFaults})
	at(200, history.Event{Source: history.SourceNemesis, Kind: history.KindFaultStart, FaultID: 1, Fault: "pause", Targets: []string{"c1"}, Trigger: "write:3"})
	e = cand(history.KindElected, "c2")
	e.Token = 2
	at(300, e)
	at(350, cand(history.KindCampaigning, "c3"))
	at(400, history.Event{Source: history.SourceNemesis, Kind: history.KindFaultEnd, FaultID: 1, Fault: "pause", Targets: []string{"c1"}})
	w := cand(history.KindWrite, "c1")
	w.Token, w.Result = 1, history.ResultAccepted
	at(410, w)
	at(411, history.Event{Source: history.SourceResource, Kind: history.KindDecision, Token: 1, Result: history.ResultAccepted, Stale: true})
	at(500, cand(history.KindSteppedDown, "c2"))
	return evs
}

func TestBehaviourSignature(t *testing.T) {
	sig := BehaviourSignature(zombieHistory(), 0)
	for _, want := range []string{
		"fault:pause@leader", "chain:write>pause", "elected-during:pause", "elected-while-another-leads",
		"waiter-recampaign-while-led", "waiter-recampaign-during:pause", "write-by-stale-leader",
		"stale-write-accepted", "two-believe-they-lead", "two-lead-during:pause",
		"stepped-down:leader", "stepped-down-no-new-election", "elections-in-faults:1",
		"order:E>F+pause@leader", "order:F+pause@leader>E",
	} {
		if !sig.Contains(want) {
			t.Errorf("signature lacks %s: %v", want, sig)
		}
	}
	for _, not := range []string{"token-granted-twice", "write-during:pause", "fault:pause@follower"} {
		if sig.Contains(not) {
			t.Errorf("signature has %s, which did not happen", not)
		}
	}
	if !slices.IsSorted(sig) {
		t.Errorf("signature not sorted: %v", sig)
	}
	// A pure function: the order events arrive in (seq) does not matter when t orders them,
	// and the input is not modified.
	evs := zombieHistory()
	slices.Reverse(evs)
	if got := BehaviourSignature(evs, 0); !slices.Equal(got, sig) {
		t.Errorf("reversed input gave %v, want %v", got, sig)
	}
	if evs[0].Seq != int64(len(evs)) {
		t.Error("BehaviourSignature reordered its input")
	}

	// The same run without the fault: another behaviour.
	var quiet []history.Event
	for _, e := range zombieHistory() {
		if e.Kind != history.KindFaultStart && e.Kind != history.KindFaultEnd {
			quiet = append(quiet, e)
		}
	}
	q := BehaviourSignature(quiet, 0)
	if q.Contains("elected-during:pause") || slices.Equal(q, sig) {
		t.Errorf("signature without the fault %v", q)
	}
	// A token granted twice.
	dup := zombieHistory()
	for i := range dup {
		if dup[i].Kind == history.KindElected && dup[i].Node == "c2" {
			dup[i].Token = 1
		}
	}
	if d := BehaviourSignature(dup, 0); !d.Contains("token-granted-twice") {
		t.Errorf("token granted twice not in %v", d)
	}
}

func testGuide(t *testing.T) Guide {
	t.Helper()
	v, err := NewVocabulary(nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	return Guide{Vocabulary: v.WithSteps([]string{"lock-acquired"}), MinNodes: 3, MaxNodes: 5}
}

// checkChain holds a chain to the causal form: 1-3 links, the first on a candidate event
// or a time, every later one on fault-start/fault-end, 3-5 nodes, and a spec that parses.
func checkChain(t *testing.T, c Chain) {
	t.Helper()
	if len(c.Links) < 1 || len(c.Links) > MaxLinks || c.Nodes < 3 || c.Nodes > 5 {
		t.Fatalf("chain %+v: %d links, %d nodes", c, len(c.Links), c.Nodes)
	}
	for i, l := range c.Links {
		chained := l.On == nemesis.EventFaultStart || l.On == nemesis.EventFaultEnd
		caused := l.On != "" && !strings.HasPrefix(l.On, nemesis.EventWrite)
		if i == 0 && chained || i > 0 && !chained && !caused {
			t.Fatalf("chain %s: link %d starts on %q", c.Spec(), i, l.On)
		}
		if l.On == "" && l.Target == nemesis.TargetTrigger {
			t.Fatalf("chain %s: a time-started link targets the trigger", c.Spec())
		}
	}
	if _, err := nemesis.Parse(c.Spec()); err != nil {
		t.Fatalf("chain spec %q does not parse: %v", c.Spec(), err)
	}
}

func TestChainSanity(t *testing.T) {
	bad := Chain{Nodes: 3, Links: []Link{{Kind: "freeze", Target: "leader", On: "write:3", For: "1xTTL"},
		{Kind: "freeze", Target: "trigger", On: "fault-start", For: "1xTTL"}}}
	if bad.Sane() {
		t.Errorf("%s: a freeze of the frozen node passed", bad.Spec())
	}
	leaderTwice := bad
	leaderTwice.Links = []Link{bad.Links[0], {Kind: "freeze", Target: "leader", On: "fault-start", After: "10ms", For: "1xTTL"}}
	if leaderTwice.Sane() {
		t.Errorf("%s: a freeze of the leader while the leader is frozen passed", leaderTwice.Spec())
	}
	storeThenLeader := bad
	storeThenLeader.Links = []Link{{Kind: "freeze", Target: "all-store", On: "write:3", For: "1xTTL"}, {Kind: "freeze", Target: "leader", On: "fault-start", For: "1xTTL"}}
	if !storeThenLeader.Sane() {
		t.Errorf("%s: a freeze of the leader while the store is frozen refused", storeThenLeader.Spec())
	}
	ok := bad
	ok.Links = []Link{bad.Links[0], {Kind: "pause", Target: "trigger", On: "fault-start", For: "1xTTL"}}
	if !ok.Sane() {
		t.Errorf("%s: a pause on a frozen node (reference-counted) refused", ok.Spec())
	}
	// Links that could not apply where their trigger points them, refused at planning.
	for _, links := range [][]Link{
		{{Kind: "pause", Target: "store-majority", On: "write:3", For: "1xTTL"}, {Kind: "slow-close", Target: "trigger", On: "fault-start", For: "1xTTL"}},
		{{Kind: "pause", Target: "all-store", On: "write:3", For: "1xTTL"}, {Kind: "slow-close", Target: "trigger", On: "fault-end", For: "1xTTL"}},
		{{Kind: "kill", Target: "leader", On: "write:3", For: "1xTTL"}, {Kind: "loss", Target: "trigger", On: "fault-start", For: "1xTTL"}},
		{{Kind: "evict", Target: "leader", On: "write:3", For: "1xTTL"}, {Kind: "pause", Target: "trigger", On: "fault-start", For: "1xTTL"}},
		// No leader while the leader is down or just back (issue 48, dynamodb-wallclock s1).
		{{Kind: "kill", Target: "leader", On: "write:3", For: "0.1xTTL"}, {Kind: "slow-close", Target: "leader", On: "fault-end", After: "30ms", For: "1.5xTTL"}},
		{{Kind: "kill", Target: "trigger", On: "write:3", For: "1.5xTTL"}, {Kind: "clock", Target: "leader", On: "fault-start", After: "0.5xTTL", For: "2xTTL"}},
		{{Kind: "kill", Target: "leader", On: "write:3", For: "0.1xTTL"}, {Kind: "pause", Target: "follower", On: "fault-end", For: "1xTTL"}, {Kind: "partition", Shape: "leader-from-store", On: "fault-start", For: "1xTTL"}},
		// No leader once the store has been down a while (redis-del-unowned s1, dynamodb-wallclock s1).
		{{Kind: "kill", Target: "all-store", At: "0s", For: "0.1xTTL"}, {Kind: "pause", Target: "leader", On: "fault-end", For: "1.5xTTL"}},
		{{Kind: "kill", Target: "all-store", On: "write:3", For: "0.1xTTL"}, {Kind: "delay", Target: "leader", On: "fault-start", After: "0.5xTTL", For: "2xTTL"}},
		{{Kind: "kill", Target: "store-majority", On: "write:3", For: "0.1xTTL"}, {Kind: "reset", Target: "follower", On: "stepped-down", For: "1xTTL"}, {Kind: "reset", Target: "leader", On: "fault-start", After: "1xTTL", For: "3xTTL"}},
	} {
		if c := (Chain{Nodes: 3, Links: links}); c.Sane() {
			t.Errorf("%s: a link that cannot apply passed", c.Spec())
		}
	}
	for _, links := range [][]Link{
		{{Kind: "kill", Target: "leader", On: "write:3", For: "1xTTL"}, {Kind: "loss", Target: "trigger", On: "fault-end", For: "1xTTL"}},
		{{Kind: "pause", Target: "leader", On: "write:3", For: "1xTTL"}, {Kind: "slow-close", Target: "trigger", On: "fault-start", For: "1xTTL"}},
		{{Kind: "kill", Target: "store-majority", On: "write:3", For: "1xTTL"}, {Kind: "slow-close", Target: "leader", On: "fault-start", For: "1xTTL"}},
		{{Kind: "kill", Target: "follower", On: "write:3", For: "0.1xTTL"}, {Kind: "slow-close", Target: "leader", On: "fault-end", For: "1xTTL"}},
		{{Kind: "pause", Target: "leader", On: "write:3", For: "2xTTL"}, {Kind: "clock", Target: "leader", On: "fault-end", For: "2xTTL"}},
		{{Kind: "kill", Target: "all-store", On: "write:3", For: "0.1xTTL"}, {Kind: "pause", Target: "leader", On: "fault-start", After: "10ms", For: "2xTTL"}},
		{{Kind: "kill", Target: "store-node", On: "write:3", For: "0.1xTTL"}, {Kind: "pause", Target: "leader", On: "fault-end", For: "2xTTL"}},
	} {
		if c := (Chain{Nodes: 3, Links: links}); !c.Sane() {
			t.Errorf("%s: a link that applies refused", c.Spec())
		}
	}
}

func TestChainsDrawnAndMutatedStayCausal(t *testing.T) {
	g := testGuide(t)
	rng := rand.New(rand.NewPCG(11, 0))
	muts := map[string]int{}
	lengths := map[int]int{}
	base := harness.Config{Store: "etcd", Recipe: "etcd-election", TTL: 2 * time.Second, FaultTime: 60 * time.Second,
		Warmup: 5 * time.Second, Recovery: 5 * time.Second, WriteInterval: 50 * time.Millisecond,
		Workload: harness.DefaultWorkload, ResourceMode: harness.DefaultResourceMode, Until: GuidedUntil(2 * time.Second)}
	accepted := 0
	for range 300 {
		swarm := g.Swarm(rng)
		if len(swarm) == 0 {
			t.Fatal("empty swarm")
		}
		c := g.Draw(rng, swarm)
		checkChain(t, c)
		for _, l := range c.Links {
			if !slices.Contains(swarm, l.Kind) {
				t.Fatalf("drawn %s uses %s outside the swarm %v", c.Spec(), l.Kind, swarm)
			}
		}
		m, applied := g.Mutate(rng, c, swarm)
		checkChain(t, m)
		if m.Key() == c.Key() {
			t.Fatalf("mutant %s equals its parent (mutations %v)", m.Spec(), applied)
		}
		for _, a := range applied {
			muts[a]++
		}
		lengths[len(m.Links)]++
		cfg := base
		cfg.Nemesis, cfg.Nodes, cfg.Seed = m.Spec(), m.Nodes, 1
		if harness.CheckConfig(&cfg) == nil {
			accepted++
		}
	}
	for _, k := range []string{MutTrigger, MutTarget, MutKind, MutDuration, MutAdd, MutRemove, MutNodes} {
		if muts[k] == 0 {
			t.Errorf("mutation %s never applied (%v)", k, muts)
		}
	}
	for n := 1; n <= MaxLinks; n++ {
		if lengths[n] == 0 {
			t.Errorf("no chain of %d links (%v)", n, lengths)
		}
	}
	t.Logf("mutations %v, lengths %v, %d of 300 run on etcd", muts, lengths, accepted)
	if accepted < 150 {
		t.Errorf("only %d of 300 mutated chains run on etcd", accepted)
	}
}

// fakeRun stands for a run: its signature follows from the schedule (kinds and events in
// it), and a pause chained on a kill of the trigger is the "bug".
func fakeRun(_ context.Context, cfg harness.Config, i int, spec string) Try {
	var sig []string
	for _, item := range strings.Split(spec, "; ") {
		kind, rest, _ := strings.Cut(item, ":")
		on := "time"
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "on="); ok {
				on = v
			}
		}
		sig = append(sig, "fault:"+kind, "chain:"+on+">"+kind)
	}
	slices.Sort(sig)
	t := Try{Verdict: harness.VerdictValid, Signature: slices.Compact(sig), RunDir: "run"}
	if strings.Contains(spec, "pause:") && strings.Contains(spec, "kill:") && strings.Contains(spec, "on=fault-end") {
		t.Verdict, t.Codes = harness.VerdictInvalid, []string{"stale-write-accepted"}
	}
	return t
}

// validRun is fakeRun with every run valid, so that a search uses its whole budget.
func validRun(ctx context.Context, cfg harness.Config, i int, spec string) Try {
	tr := fakeRun(ctx, cfg, i, spec)
	tr.Verdict, tr.Codes = harness.VerdictValid, nil
	return tr
}

func guidedOptions(t *testing.T, runs int) Options {
	v, err := NewVocabulary(nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Vocabulary: v, MaxRuns: runs, Seed: 5, Runner: fakeRun,
		Base: harness.Config{Store: "redis", Recipe: "redis-setnx", TTL: 2 * time.Second, FaultTime: 60 * time.Second,
			Warmup: 5 * time.Second, Recovery: 5 * time.Second, WriteInterval: 50 * time.Millisecond,
			Workload: harness.DefaultWorkload, ResourceMode: "unfenced"}}
}

func specs(r Result) []string {
	var out []string
	for _, t := range r.Tries {
		out = append(out, t.Spec)
	}
	return out
}

// The same seed and the same run outcomes make the same search; another seed another one.
func TestGuidedSearchIsSeeded(t *testing.T) {
	a, err := Explore(context.Background(), guidedOptions(t, 25))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Explore(context.Background(), guidedOptions(t, 25))
	if !slices.Equal(specs(a), specs(b)) {
		t.Fatalf("same seed, different searches:\n%v\n%v", specs(a), specs(b))
	}
	o := guidedOptions(t, 25)
	o.Seed = 6
	c, _ := Explore(context.Background(), o)
	if slices.Equal(specs(a), specs(c)) {
		t.Fatal("seeds 5 and 6 made the same search")
	}
	mutated := 0
	for _, tr := range a.Tries {
		if tr.Chain == nil {
			continue
		}
		if tr.Parent > 0 {
			mutated++
		}
	}
	if len(a.Corpus.Entries) == 0 || len(a.Corpus.Seen) == 0 {
		t.Fatalf("no corpus grew: %+v", a.Corpus)
	}
	if a.Stop != StopFound {
		if mutated == 0 {
			t.Errorf("no try of %d mutated a corpus entry", len(a.Tries))
		}
	}
	t.Logf("seed 5: %d tries, stop %s, %d entries, %d features, %d mutated", len(a.Tries), a.Stop, len(a.Corpus.Entries), len(a.Corpus.Seen), mutated)
}

// A corpus saved after every try loads back the same, and a resume continues from it on
// its own stream: it does not repeat the first session's draws, and is itself reproducible.
func TestCorpusSaveLoadResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "corpus.json")
	o := guidedOptions(t, 6)
	o.Runner = validRun
	o.CorpusPath = path
	first, err := Explore(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadCorpus(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Tries != 6 || len(loaded.Entries) != len(first.Corpus.Entries) || len(loaded.Seen) != len(first.Corpus.Seen) {
		t.Fatalf("loaded %d tries, %d entries, %d features; saved 6, %d, %d", loaded.Tries, len(loaded.Entries), len(loaded.Seen), len(first.Corpus.Entries), len(first.Corpus.Seen))
	}
	for i, e := range loaded.Entries {
		if e.Chain.Key() != first.Corpus.Entries[i].Chain.Key() || !slices.Equal(e.Signature, first.Corpus.Entries[i].Signature) {
			t.Fatalf("entry %d changed on the way through the file", i)
		}
	}
	resume := func() Result {
		c, err := LoadCorpus(path)
		if err != nil {
			t.Fatal(err)
		}
		r := o
		r.CorpusPath, r.Corpus = "", c
		res, err := Explore(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	r1, r2 := resume(), resume()
	if !slices.Equal(specs(r1), specs(r2)) {
		t.Fatal("two resumes from the same corpus differ")
	}
	if slices.Equal(specs(r1), specs(first)) {
		t.Fatal("the resume repeated the first session's draws")
	}
	if r1.Tries[0].N != 7 || r1.Corpus.Tries != 12 {
		t.Errorf("resumed tries numbered from %d, corpus at %d tries; want 7 and 12", r1.Tries[0].N, r1.Corpus.Tries)
	}
	if _, err := LoadCorpus(filepath.Join(t.TempDir(), "none.json")); err == nil || !strings.Contains(err.Error(), "drop --resume") {
		t.Errorf("missing corpus: %v", err)
	}
}

// The fake bug (a kill chained on a pause's end) is found by the guided search.
func TestGuidedSearchFindsAChainedBug(t *testing.T) {
	o := guidedOptions(t, 400)
	o.Vocabulary, _ = NewVocabulary([]string{"pause", "kill", "freeze", "partition"}, 3)
	res, err := Explore(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Found == nil {
		t.Fatalf("no find in %d tries", len(res.Tries))
	}
	t.Logf("found in try %d: %s", res.Found.N, res.Found.Spec)
}

// A history in which the leader c1 wrote just before c2 was elected (a handoff gap of 5 ms,
// under a tenth of a 100 ms TTL), and c2 was then paused for 150 ms (past the TTL) and
// wrote again without stepping down.
func nearHistory() []history.Event {
	var evs []history.Event
	at := func(ms int64, e history.Event) {
		e.Seq, e.T, e.V = int64(len(evs)+1), ms*1e6, history.Version
		evs = append(evs, e)
	}
	cand := func(kind history.Kind, node string, token int64) history.Event {
		return history.Event{Source: history.SourceCandidate, Kind: kind, Node: node, Token: token, Result: history.ResultAccepted}
	}
	at(1, history.Event{Source: history.SourceHarness, Kind: history.KindPhase, Phase: history.PhaseFaults})
	at(10, cand(history.KindElected, "c1", 1))
	at(90, cand(history.KindWrite, "c1", 1))
	at(92, cand(history.KindSteppedDown, "c1", 0))
	at(95, cand(history.KindElected, "c2", 2))
	at(120, cand(history.KindWrite, "c2", 2))
	at(200, history.Event{Source: history.SourceNemesis, Kind: history.KindFaultStart, FaultID: 1, Fault: "pause", Targets: []string{"c2"}})
	at(350, history.Event{Source: history.SourceNemesis, Kind: history.KindFaultEnd, FaultID: 1, Fault: "pause", Targets: []string{"c2"}})
	at(360, cand(history.KindWrite, "c2", 2))
	return evs
}

func TestNearViolationFeatures(t *testing.T) {
	ttl := 100 * time.Millisecond
	sig := BehaviourSignature(nearHistory(), ttl)
	for _, want := range []string{"near:fault-past-ttl:pause@leader", "near:write-after-fault-past-ttl:pause", "near:handoff-gap<0.1xTTL"} {
		if !sig.Contains(want) {
			t.Errorf("signature lacks %s: %v", want, sig)
		}
	}
	if sig.Nearness() != 3 {
		t.Errorf("nearness %d of %v, want 3", sig.Nearness(), sig)
	}
	// A pause shorter than the TTL is not near; a gap of most of a TTL is not either.
	long := BehaviourSignature(nearHistory(), time.Second)
	if long.Contains("near:fault-past-ttl:pause@leader") || long.Contains("near:write-after-fault-past-ttl:pause") {
		t.Errorf("TTL 1s, a 150 ms pause counted as past the TTL: %v", long)
	}
	if wide := BehaviourSignature(nearHistory(), 8*time.Millisecond); !wide.Contains("handoff-gap<1xTTL") || wide.Contains("near:handoff-gap<0.1xTTL") {
		t.Errorf("TTL 8ms, a 5 ms gap: %v", wide)
	}
	// Without a TTL no feature depends on it.
	for _, f := range BehaviourSignature(nearHistory(), 0) {
		if strings.HasPrefix(f, NearPrefix) || strings.HasPrefix(f, "handoff-gap") {
			t.Errorf("no TTL: %s", f)
		}
	}
	// The stale zombie of zombieHistory: held past the TTL while c2 was elected, then wrote.
	z := BehaviourSignature(zombieHistory(), ttl)
	for _, want := range []string{"near:fault-past-ttl:pause@stale-leader", "near:write-after-fault-past-ttl:pause"} {
		if !z.Contains(want) {
			t.Errorf("zombie signature lacks %s: %v", want, z)
		}
	}
}

// Fresh chains are drawn for the first FreshRuns runs although the corpus grows from the
// first; mutations start only after them, and then about half the runs are mutations.
func TestFirstRunsAreFresh(t *testing.T) {
	o := guidedOptions(t, 30)
	o.Runner = validRun
	res, err := Explore(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	mutated := 0
	for _, tr := range res.Tries {
		if tr.N <= FreshRuns && tr.Parent != 0 {
			t.Errorf("try %d mutated try %d inside the fresh stretch", tr.N, tr.Parent)
		}
		if tr.Parent != 0 {
			mutated++
		}
	}
	if entries := slices.IndexFunc(res.Tries, func(tr Try) bool { return len(tr.New) > 0 }); entries < 0 || entries >= FreshRuns {
		t.Fatalf("the corpus did not grow inside the fresh stretch (first new behaviour at index %d)", entries)
	}
	// One in two after the stretch: 24 draws, at least a third of them mutations.
	if after := len(res.Tries) - FreshRuns; mutated*3 < after {
		t.Errorf("%d of the %d runs after the fresh stretch were mutations, want at least a third", mutated, after)
	}
}

// Faults on the leader, on the candidate whose event fired the link, and cuts of the leader
// from the store are drawn leaderWeight times as often as each other fault, and are held
// past the TTL three times in four.
func TestLeaderAndTriggerTargetsWeighted(t *testing.T) {
	g := testGuide(t)
	rng := rand.New(rand.NewPCG(3, 0))
	var atoms []atom
	for _, a := range g.Vocabulary.atoms {
		if a.target != nemesis.TargetStaleLeader {
			atoms = append(atoms, a)
		}
	}
	g.Vocabulary.atoms = atoms
	leaderAtoms := 0
	for _, a := range atoms {
		if a.onLeader() {
			leaderAtoms++
		}
	}
	uniform := float64(leaderAtoms) / float64(len(atoms))
	want := float64(leaderWeight*leaderAtoms) / float64(leaderWeight*leaderAtoms+len(atoms)-leaderAtoms)
	kinds := g.Swarm(rand.New(rand.NewPCG(1, 1)))
	for _, a := range atoms {
		if !slices.Contains(kinds, a.kind) {
			kinds = append(kinds, a.kind)
		}
	}
	const n = 4000
	onLeader, past := 0, 0
	for range n {
		l, _ := g.drawLink(rng, kinds, nil, false)
		if !(atom{target: l.Target, shape: l.Shape}).onLeader() {
			continue
		}
		onLeader++
		if slices.Contains(pastTTLMenu, l.For) {
			past++
		}
	}
	got := float64(onLeader) / n
	t.Logf("links on the leader: %.2f (uniform %.2f, weighted %.2f); held past the TTL: %d of %d", got, uniform, want, past, onLeader)
	if got < want-0.05 || got < 1.8*uniform {
		t.Errorf("%.2f of the links hit the leader, want about %.2f (uniform would be %.2f)", got, want, uniform)
	}
	// 3/4 from pastTTLMenu plus 4/6 of the remaining quarter from forMenu's past-TTL values.
	if float64(past)/float64(onLeader) < 0.8 {
		t.Errorf("%d of %d leader links held past the TTL, want over 80%%", past, onLeader)
	}
}

// specFields splits one fault of a --nemesis spec into its kind and its key=value fields.
func specFields(item string) (string, map[string]string) {
	kind, rest, _ := strings.Cut(item, ":")
	kv := map[string]string{}
	for _, p := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(p, "=")
		kv[k] = v
	}
	return kind, kv
}

// zombieRun stands for a recipe with the zombie bug: a leader paused or frozen past its TTL
// on its own write (the narrow moment) comes back and writes stale. Its signature follows
// from the schedule and shows a fault held on the leader past the TTL as near a violation,
// as a real history would.
func zombieRun(_ context.Context, cfg harness.Config, _ int, spec string) Try {
	var sig []string
	t := Try{Verdict: harness.VerdictValid, RunDir: "run"}
	for _, item := range strings.Split(spec, "; ") {
		kind, kv := specFields(item)
		on := kv["on"]
		if on == "" {
			on = "time"
		}
		sig = append(sig, "fault:"+kind+"@"+kv["target"], "chain:"+on+">"+kind)
		d, err := nemesis.ParseDur(kv["for"])
		past := err == nil && (d.TTLs >= 1.5 || d.D >= cfg.TTL*3/2)
		onLeader := kv["target"] == nemesis.TargetLeader || kv["target"] == nemesis.TargetTrigger
		if past && onLeader {
			sig = append(sig, NearPrefix+"fault-past-ttl:"+kind+"@leader")
			if (kind == "pause" || kind == "freeze") && strings.HasPrefix(on, nemesis.EventWrite) {
				t.Verdict, t.Codes = harness.VerdictInvalid, []string{"stale-write-accepted"}
			}
		}
	}
	slices.Sort(sig)
	t.Signature = slices.Compact(sig)
	return t
}

// The guided search finds the zombie in far fewer runs than random schedules over the same
// seeds, with the whole vocabulary (the shapes that find it are 4 of its ~100 forms).
func TestGuidedFindsTheZombieSoonerThanRandom(t *testing.T) {
	const seeds, budget = 30, 150
	runs := func(mode string) []int {
		var out []int
		for seed := int64(1); seed <= seeds; seed++ {
			o := guidedOptions(t, budget)
			o.Runner, o.Seed, o.Mode = zombieRun, seed, mode
			res, err := Explore(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			n := budget + 1 // a miss counts as past the budget
			if res.Found != nil {
				n = res.Found.N
			}
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	g, r := runs(ModeGuided), runs(ModeRandom)
	gm, gp90, rm := g[seeds/2], g[seeds*9/10], r[seeds/2]
	t.Logf("runs until the find over %d seeds: guided median %d, p90 %d, max %d; random median %d, p90 %d, max %d", seeds, gm, gp90, g[seeds-1], rm, r[seeds*9/10], r[seeds-1])
	if g[seeds-1] > budget {
		t.Errorf("guided missed on a seed in %d runs: %v", budget, g)
	}
	if gm > 12 || 3*gm > rm {
		t.Errorf("guided median %d runs, random %d: want guided at most 12 and a third of random", gm, rm)
	}
}

// Fence faults act only on requests to the fence device: the guided search leaves them out
// until a run showed a request, and draws them after. The 3 fence forms are a few of the
// swarm's forms: one chain in eighteen draws one (111 of 2000 tries over seeds 1-20), so 100
// tries after the request miss all of them with probability about 0.4% (the seed fixes the
// sample; a change in how many draws a try consumes moves it).
func TestFenceKindsWaitForAFenceRequest(t *testing.T) {
	o := guidedOptions(t, 120)
	o.Runner = func(ctx context.Context, cfg harness.Config, i int, spec string) Try {
		tr := validRun(ctx, cfg, i, spec)
		if i >= 20 {
			tr.Signature = append(tr.Signature, FeatureFenceRequested)
			slices.Sort(tr.Signature)
		}
		return tr
	}
	res, err := Explore(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	later := 0
	for _, tr := range res.Tries {
		fence := strings.Contains(tr.Spec, "fence-")
		if fence && tr.N <= 20 {
			t.Errorf("try %d drew a fence fault before any fence request: %s", tr.N, tr.Spec)
		}
		if fence {
			later++
		}
	}
	if later == 0 {
		t.Error("no fence fault drawn after runs showed fence requests")
	}
	if sig := BehaviourSignature([]history.Event{{Source: history.SourceHarness, Kind: history.KindFenceRequest, T: 1, Action: history.FenceOff}}, 0); !sig.Contains(FeatureFenceRequested) {
		t.Errorf("a fence request gave %v", sig)
	}
}

// The entry to mutate: one that came near a violation first, one whose run was unknown
// last, and only entries using one of the run's swarm kinds when there are any.
func TestPickPrefersNearAndSwarm(t *testing.T) {
	link := func(kind string) []Link { return []Link{{Kind: kind, Target: "leader", On: "write:3", For: "2xTTL"}} }
	c := NewCorpus("t", 1)
	c.Add(Entry{Chain: Chain{Nodes: 3, Links: link("pause")}, Signature: Signature{"fault:pause@leader"}, Verdict: "valid", Try: 1})
	c.Add(Entry{Chain: Chain{Nodes: 3, Links: link("freeze")}, Signature: Signature{"fault:freeze@leader"}, Verdict: "unknown", Try: 2})
	c.Add(Entry{Chain: Chain{Nodes: 3, Links: link("clock")}, Signature: Signature{"near:fault-past-ttl:clock@leader", "near:write-after-fault-past-ttl:clock"}, Verdict: "valid", Try: 3})
	c.Add(Entry{Chain: Chain{Nodes: 3, Links: link("kill")}, Signature: Signature{"fault:kill@leader"}, Verdict: "valid", Try: 4})
	first := func(int) int { return 0 }
	all := []string{"pause", "freeze", "clock", "kill"}
	if e := c.pick(first, all); e.Try != 3 {
		t.Errorf("picked try %d first, want the near one (3)", e.Try)
	}
	var order []int
	for range 3 {
		order = append(order, c.pick(first, all).Try)
	}
	if slices.Contains(order, 2) {
		t.Errorf("picks %v: the unknown run's entry came before a valid one was picked twice", order)
	}
	if e := c.pick(first, []string{"kill", "reset"}); e.Try != 4 {
		t.Errorf("swarm kill,reset picked try %d, want the kill entry (4)", e.Try)
	}
	if e := c.pick(first, []string{"reset"}); e == nil {
		t.Error("a swarm no entry uses picked nothing; want any entry")
	}
}

// amnesiaRun stands for Redlock over in-memory servers (the redlock-restart corpus entry): a
// majority of the servers crashing and coming back within the holder's validity, i.e. a
// kill of store-majority or all-store that restarts within half a TTL, lets a waiter lead
// beside the holder. Every other schedule is valid.
func amnesiaRun(_ context.Context, cfg harness.Config, _ int, spec string) Try {
	var sig []string
	t := Try{Verdict: harness.VerdictValid, RunDir: "run"}
	for _, item := range strings.Split(spec, "; ") {
		kind, kv := specFields(item)
		sig = append(sig, "fault:"+kind+"@"+kv["target"])
		d, err := nemesis.ParseDur(kv["for"])
		short := err == nil && (d.TTLs > 0 && d.TTLs <= 0.5 || d.TTLs == 0 && d.D <= cfg.TTL/2)
		if kind == "kill" && short && (kv["target"] == nemesis.TargetStoreMajority || kv["target"] == nemesis.TargetAllStore) {
			t.Verdict, t.Codes = harness.VerdictInvalid, []string{"stale-write-accepted"}
		}
	}
	slices.Sort(sig)
	t.Signature = slices.Compact(sig)
	return t
}

// On a store that forgets on a crash (storekinds.Volatile) a third of the fresh chains open
// with a crash of store nodes that restarts at once, and half the other crashes restart at
// once; on another store the plain draw decides. The fake Redlock amnesia is then found within a few runs.
func TestVolatileStoreCrashesOpenChains(t *testing.T) {
	g := testGuide(t)
	rng := rand.New(rand.NewPCG(7, 7))
	const n = 4000
	share := func(volatile bool) (storeCrash, quick float64) {
		g.VolatileStore = volatile
		crashes := 0
		for range n {
			c := g.Draw(rng, g.Swarm(rng))
			checkChain(t, c)
			if l := c.Links[0]; l.Kind == "kill" && strings.HasPrefix(l.Target, "store-") || l.Kind == "kill" && l.Target == nemesis.TargetAllStore {
				storeCrash++
			}
			for _, l := range c.Links {
				if l.Kind == "kill" {
					crashes++
					if l.For == quickRestart {
						quick++
					}
				}
			}
		}
		return storeCrash / n, quick / float64(crashes)
	}
	plain, plainQuick := share(false)
	vol, volQuick := share(true)
	t.Logf("first link a store crash: %.3f plain, %.3f volatile; quick restarts of all crashes: %.2f, %.2f", plain, vol, plainQuick, volQuick)
	if plain > 0.05 || vol < 0.28 || vol > 0.42 {
		t.Errorf("store crashes open %.3f of plain chains (want < 0.05) and %.3f on a volatile store (want 0.28-0.42)", plain, vol)
	}
	if plainQuick < 0.4 || plainQuick > 0.6 || volQuick < plainQuick+0.1 {
		t.Errorf("%.2f of the crashes restart at once, want about half; %.2f on a volatile store, want more", plainQuick, volQuick)
	}

	const seeds, budget = 20, 120
	found := func(store, recipe string) []int {
		var out []int
		for seed := int64(1); seed <= seeds; seed++ {
			o := guidedOptions(t, budget)
			o.Base.Store, o.Base.Recipe = store, recipe
			o.Runner, o.Seed = amnesiaRun, seed
			res, err := Explore(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			k := budget + 1
			if res.Found != nil {
				k = res.Found.N
			}
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	multi := found("redis-multi", "redlock")
	t.Logf("runs until the fake amnesia is found on redis-multi over %d seeds: median %d, p90 %d, max %d", seeds, multi[seeds/2], multi[seeds*9/10], multi[seeds-1])
	// Measured: median 2, p90 6, max 6 (a third of the fresh chains, half the runs after
	// the fresh stretch, open with a quick crash of a store majority or all of it).
	if multi[seeds/2] > 4 || multi[seeds-1] > 30 {
		t.Errorf("guided needed %v runs on redis-multi: want a median of at most 4 and none over 30", multi)
	}
}

// Runs that cannot run (no engine: every try a harness error at once) end the search after
// MaxErrorsInARow of them in a row, as replay does, instead of leaving a run directory a
// try until the budget; an error between runs that ran starts the count again. Both modes.
func TestSearchStopsAfterHarnessErrorsInARow(t *testing.T) {
	for _, mode := range []string{ModeGuided, ModeRandom} {
		o := guidedOptions(t, 100)
		o.Mode = mode
		o.Runner = func(_ context.Context, _ harness.Config, i int, _ string) Try {
			return Try{Err: errors.New("setup: no Docker engine answers"), RunDir: fmt.Sprintf("run%d", i)}
		}
		res, err := Explore(context.Background(), o)
		if !errors.Is(err, ErrHarnessErrors) || !strings.Contains(err.Error(), "3 runs in a row could not run") ||
			!strings.Contains(err.Error(), "no Docker engine answers") {
			t.Errorf("%s: error %v, want the search stopped naming the last error", mode, err)
		}
		if len(res.Tries) != MaxErrorsInARow || res.Stop != StopErrors {
			t.Errorf("%s: %d tries, stop %q: want %d, %s", mode, len(res.Tries), res.Stop, MaxErrorsInARow, StopErrors)
		}

		calls := 0
		o.Runner = func(ctx context.Context, cfg harness.Config, i int, spec string) Try {
			if calls++; calls%3 == 0 {
				return validRun(ctx, cfg, i, spec)
			}
			return Try{Err: errors.New("one setup failed")}
		}
		o.MaxRuns = 12
		res, err = Explore(context.Background(), o)
		if err != nil || len(res.Tries) != 12 {
			t.Errorf("%s, errors between runs that ran: %d tries, %v: want all 12", mode, len(res.Tries), err)
		}
	}
}

// causeRun makes every try invalid: tries 1 and 3 rest on a store crash (redis came back
// empty), 2 and 4 on the candidate's own logic, 5 on its own logic with another reason.
func causeRun(ctx context.Context, cfg harness.Config, i int, spec string) Try {
	tr := validRun(ctx, cfg, i, spec)
	tr.Verdict = harness.VerdictInvalid
	switch {
	case i%2 == 1 && i < 5:
		tr.Codes = []string{"token-duplicate"}
		tr.Cause = &checkers.Cause{Class: checkers.CauseStoreAmnesia, Key: "store-amnesia|token-duplicate"}
	case i < 5:
		tr.Codes = []string{"stale-write-accepted"}
		tr.Cause = &checkers.Cause{Class: checkers.CauseOwnLogic, Key: "own-logic|stale-write-accepted"}
	default:
		tr.Codes = []string{"leader-overlap"} // no cause read: own-logic by its codes
	}
	return tr
}

// A search sets accepted causes aside, counts repeats, and stops at the N-th distinct find.
func TestSearchGoesOnPastAcceptedAndRepeatedCauses(t *testing.T) {
	o := guidedOptions(t, 10)
	o.Runner = causeRun
	r, err := Explore(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != StopFound || len(r.Tries) != 1 || r.Found == nil || r.Found.Cause.Class != checkers.CauseStoreAmnesia {
		t.Fatalf("by default the first invalid run is the find: stop %s after %d tries, found %+v", r.Stop, len(r.Tries), r.Found)
	}
	o.Accept, o.Finds = []string{checkers.CauseStoreAmnesia}, 2
	r, err = Explore(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != StopFound || len(r.Tries) != 5 {
		t.Fatalf("stop %s after %d tries; want the second distinct find at try 5", r.Stop, len(r.Tries))
	}
	if len(r.SetAside) != 2 || r.SetAside[0].N != 1 || r.SetAside[1].N != 3 || !r.SetAside[0].SetAside {
		t.Errorf("set aside: %+v; want tries 1 and 3", r.SetAside)
	}
	if len(r.Finds) != 2 || r.Finds[0].N != 2 || r.Finds[1].N != 5 || r.Found.N != 2 {
		t.Errorf("finds: %+v; want tries 2 and 5", r.Finds)
	}
	if r.Repeats["own-logic|stale-write-accepted"] != 1 || !r.Tries[3].Repeat {
		t.Errorf("repeats %v; want try 4 counted as a repeat of try 2", r.Repeats)
	}
}

// On an in-memory store, tries that crash store nodes are slow (a restarted server is slow
// to come back); once they took a third of the search's time, the draws spare the store.
func TestStoreCrashesTakeABoundedShare(t *testing.T) {
	o := guidedOptions(t, 200)
	var spent, crashing time.Duration
	t0 := time.Now()
	o.now = func() time.Time { return t0.Add(spent) } // the tries' time, not the test's
	o.Runner = func(ctx context.Context, cfg harness.Config, i int, spec string) Try {
		tr := validRun(ctx, cfg, i, spec)
		tr.Elapsed = 10 * time.Second
		if strings.Contains(spec, "kill:target=store-") || strings.Contains(spec, "kill:target=all-store") {
			tr.Elapsed = 200 * time.Second
			crashing += tr.Elapsed
		}
		spent += tr.Elapsed
		return tr
	}
	r, err := Explore(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if crashing == 0 {
		t.Fatal("no try crashed the store: the bound was not exercised")
	}
	share := float64(crashing) / float64(spent)
	t.Logf("%d tries, %v of %v crashing the store (%.0f%%)", len(r.Tries), crashing, spent, 100*share)
	if share > 0.45 {
		t.Errorf("store crashes took %.0f%% of the search's time; want about a third at most", 100*share)
	}
}

// One bug whose runs differ in the codes beside its own is one find: the same class and a
// code in common make a repeat (issue 48: etcd-lock-unfenced was reported as two finds,
// "token-duplicate" and "interleaving,token-duplicate"); another class, or no code in
// common, is another find.
func TestOneBugWithVaryingCodesIsOneFind(t *testing.T) {
	o := guidedOptions(t, 5)
	o.Finds = 3
	o.Runner = func(ctx context.Context, cfg harness.Config, i int, spec string) Try {
		tr := validRun(ctx, cfg, i, spec)
		tr.Verdict = harness.VerdictInvalid
		key := []string{"", "own-logic|token-duplicate", "own-logic|interleaving,token-duplicate", "store-amnesia|token-duplicate",
			"own-logic|interleaving,stale-write-accepted", "own-logic|token-duplicate"}[i]
		class, codes, _ := strings.Cut(key, "|")
		tr.Codes = strings.Split(codes, ",")
		tr.Cause = &checkers.Cause{Class: class, Key: key}
		return tr
	}
	r, err := Explore(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, f := range r.Finds {
		got = append(got, f.N)
	}
	if !slices.Equal(got, []int{1, 3, 4}) {
		t.Errorf("finds in tries %v; want 1, 3 (another class) and 4 (no code in common)", got)
	}
	if r.Repeats["own-logic|token-duplicate"] != 1 || !r.Tries[1].Repeat {
		t.Errorf("repeats %v; want try 2 counted under try 1's find", r.Repeats)
	}
}

// TestClockStepsBothWays: the vocabulary steps a clock ahead as well as back, on every
// clock target, and a chain carries the form through its spec, its mutations and the corpus.
func TestClockStepsBothWays(t *testing.T) {
	v, err := NewVocabulary([]string{"clock"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	forms := v.Atoms()
	for _, want := range []string{"clock:target=follower", "clock:target=follower," + clockAhead, "clock:target=leader," + clockAhead, "clock:target=trigger," + clockAhead} {
		if !slices.Contains(forms, want) {
			t.Errorf("no form %s in %v", want, forms)
		}
	}
	for _, f := range forms {
		s, err := nemesis.Parse(f + ",on=write:3,for=1xTTL")
		if err != nil {
			t.Fatalf("%s does not parse: %v", f, err)
		}
		if d := s.Faults[0].Params["delta"]; strings.Contains(f, clockAhead) != (d == "+3xTTL") {
			t.Errorf("%s parses with delta %q", f, d)
		}
	}
	g := Guide{Vocabulary: v, MinNodes: 3, MaxNodes: 3}
	rng := rand.New(rand.NewPCG(3, 0))
	ahead := 0
	for range 200 {
		c := g.Draw(rng, []string{"clock"})
		for _, l := range c.Links {
			if l.Params == clockAhead {
				ahead++
				if !strings.Contains(c.Spec(), l.atom()) || g.atomOf(l).params != clockAhead {
					t.Fatalf("chain %s lost the link's form %s", c.Spec(), l.atom())
				}
			}
		}
		m, _ := g.Mutate(rng, c, []string{"clock"})
		if _, err := nemesis.Parse(m.Spec()); err != nil {
			t.Fatalf("mutant %s does not parse: %v", m.Spec(), err)
		}
	}
	if ahead == 0 {
		t.Error("200 chains of clock faults never stepped a clock ahead")
	}
}
