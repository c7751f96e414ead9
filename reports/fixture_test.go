package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

const ms = int64(time.Millisecond)

var sourceOf = map[history.Kind]history.Source{
	history.KindCampaigning: history.SourceCandidate, history.KindElected: history.SourceCandidate,
	history.KindSteppedDown: history.SourceCandidate, history.KindWrite: history.SourceCandidate, history.KindError: history.SourceCandidate,
	history.KindStep:     history.SourceCandidate,
	history.KindDecision: history.SourceResource, history.KindBadRequest: history.SourceResource,
	history.KindRunStart: history.SourceHarness, history.KindPhase: history.SourceHarness, history.KindProcessStart: history.SourceHarness,
	history.KindProcessExit: history.SourceHarness, history.KindSignal: history.SourceHarness,
	history.KindContractViolation: history.SourceHarness, history.KindRunEnd: history.SourceHarness,
	history.KindFaultStart: history.SourceNemesis, history.KindFaultEnd: history.SourceNemesis,
}

// fixture describes a small hand-built run; the strings are the knobs the XSS test turns.
type fixture struct {
	cands      [3]string
	stepReason string
	schedule   string
	unfenced   bool // c1's zombie write is accepted (stale) instead of rejected
	negative   bool // the recipe is a negative control (config.json recipe_timing.negative)
	recipe     string
	nemesis    string
	store      string
	started    time.Time
	extraLine  string // a contract-violation line
	// thirdToken is c3's token (default 3); 2 or 1 makes a token anomaly.
	thirdToken int64
	noThird    bool // c3 is never elected: no leader after the kill
	// zombieWrites is how many writes c1 makes with its old token after the pause (0 = 1),
	// 50ms apart: unfenced, each is a stale write and an interleaving.
	zombieWrites int
	workload     string // flags.workload; "" is steady
	// zombieStep is a step c1 reports just before its zombie write (a sidecar's poll), "" none.
	zombieStep string
	library    []string // params.library: a library recipe's pinned packages
}

func defaultFixture() fixture {
	return fixture{cands: [3]string{"c1", "c2", "c3"}, stepReason: "lease lost", schedule: "pause:target=leader,for=4s",
		recipe: "etcd-election", nemesis: "pause-leader", store: "etcd", started: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// events builds the scenario: c1 leads (token 1), is paused past its TTL, c2 is elected
// (token 2) while c1 still believes it leads (split brain), c1's zombie write is rejected
// (or accepted when unfenced), a store node is partitioned, c2 is killed, c3 takes over.
func (f fixture) events() []history.Event {
	var ev []history.Event
	base := int64(10 * time.Second)
	add := func(tms int64, e history.Event) {
		e.T = base + tms*ms
		e.Source = sourceOf[e.Kind]
		ev = append(ev, e)
	}
	c1, c2, c3 := f.cands[0], f.cands[1], f.cands[2]
	wid := 0
	maxTok := int64(0)
	write := func(tms int64, node string, tok int64) {
		wid++
		id := fmt.Sprintf("w%d", wid)
		res, stale := history.ResultAccepted, tok < maxTok
		mode := checkers.ModeFenced
		if f.unfenced {
			mode = checkers.ModeUnfenced
		}
		if stale && !f.unfenced {
			res = history.ResultRejected
		}
		add(tms, history.Event{Kind: history.KindDecision, Node: node, Token: tok, WriteID: id, Result: res, Max: maxTok, Stale: stale, Mode: mode})
		add(tms+1, history.Event{Kind: history.KindWrite, Node: node, Token: tok, WriteID: id, CallT: base + (tms-1)*ms, Result: res})
		if res == history.ResultAccepted && tok > maxTok {
			maxTok = tok
		}
	}
	add(0, history.Event{Kind: history.KindRunStart, Spec: "fixture"})
	add(0, history.Event{Kind: history.KindPhase, Phase: history.PhaseSetup})
	for _, c := range f.cands {
		add(50, history.Event{Kind: history.KindProcessStart, Node: c})
	}
	add(100, history.Event{Kind: history.KindPhase, Phase: history.PhaseWarmup})
	for _, c := range f.cands {
		add(200, history.Event{Kind: history.KindCampaigning, Node: c})
	}
	add(300, history.Event{Kind: history.KindElected, Node: c1, Token: 1})
	for t := int64(350); t < 3000; t += 50 {
		write(t, c1, 1)
	}
	add(2000, history.Event{Kind: history.KindPhase, Phase: history.PhaseFaults})
	add(3000, history.Event{Kind: history.KindFaultStart, FaultID: 1, Fault: "pause", Targets: []string{c1}, Spec: f.schedule})
	add(5190, history.Event{Kind: history.KindStep, Node: c2, Name: "lock-acquired"}) // checkers ignore it
	add(5200, history.Event{Kind: history.KindElected, Node: c2, Token: 2})
	for t := int64(5250); t < 12000; t += 50 {
		write(t, c2, 2)
	}
	add(7000, history.Event{Kind: history.KindFaultEnd, FaultID: 1})
	zombie := int64(max(f.zombieWrites, 1))
	if f.zombieStep != "" {
		add(7005, history.Event{Kind: history.KindStep, Node: c1, Name: f.zombieStep})
		add(7008, history.Event{Kind: history.KindStep, Node: c1, Name: "leader-work"}) // skipped: no belief
	}
	for i := int64(0); i < zombie; i++ {
		write(7010+i*50, c1, 1) // the zombie's writes
	}
	add(7100+(zombie-1)*50, history.Event{Kind: history.KindSteppedDown, Node: c1, Reason: f.stepReason})
	add(7200+(zombie-1)*50, history.Event{Kind: history.KindCampaigning, Node: c1})
	add(9000, history.Event{Kind: history.KindFaultStart, FaultID: 2, Fault: "partition", Targets: []string{"etcd-2"}, Spec: "partition:target=store-minority"})
	add(11000, history.Event{Kind: history.KindFaultEnd, FaultID: 2})
	// The kill was triggered by c2's write 100 (on=write:100): the report says so.
	add(12000, history.Event{Kind: history.KindFaultStart, FaultID: 3, Fault: "kill", Targets: []string{c2}, Spec: "kill:target=leader,on=write:100",
		Trigger: "write:100", TriggerNodes: []string{c2}, TriggerT: base + 11970*ms})
	add(12001, history.Event{Kind: history.KindSignal, Node: c2, Signal: "SIGKILL"})
	exit := 137
	add(12002, history.Event{Kind: history.KindProcessExit, Node: c2, Exit: &exit})
	add(12500, history.Event{Kind: history.KindFaultEnd, FaultID: 3})
	add(12600, history.Event{Kind: history.KindProcessStart, Node: c2})
	add(12700, history.Event{Kind: history.KindCampaigning, Node: c2})
	if f.extraLine != "" {
		add(13000, history.Event{Kind: history.KindContractViolation, Node: c3, Line: f.extraLine, Reason: "malformed output: " + f.extraLine})
	}
	if !f.noThird {
		tok3 := f.thirdToken
		if tok3 == 0 {
			tok3 = 3
		}
		// c3's winning acquire was sent after c2's grant returned: a token lower than c2's is
		// then a real inversion (grant-time order, docs/checkers.md).
		add(14500, history.Event{Kind: history.KindElected, Node: c3, Token: tok3, CallT: base + 14400*ms})
		for t := int64(14550); t < 20000; t += 50 {
			write(t, c3, tok3)
		}
	}
	add(16000, history.Event{Kind: history.KindPhase, Phase: history.PhaseHeal})
	add(16100, history.Event{Kind: history.KindPhase, Phase: history.PhaseRecovery})
	add(20000, history.Event{Kind: history.KindPhase, Phase: history.PhaseTeardown})
	add(20100, history.Event{Kind: history.KindRunEnd})
	// Seq in time order, as the writer would have assigned them.
	sortEvents(ev)
	for i := range ev {
		ev[i].V, ev[i].Seq = history.Version, int64(i+1)
	}
	return ev
}

func sortEvents(ev []history.Event) {
	// insertion-stable sort by time; fixtures are small
	for i := 1; i < len(ev); i++ {
		for j := i; j > 0 && ev[j].T < ev[j-1].T; j-- {
			ev[j], ev[j-1] = ev[j-1], ev[j]
		}
	}
}

// writeRun writes history.jsonl, config.json and results.json (checked for real) into dir.
func writeRun(t testing.TB, dir string, f fixture) *checkers.Results {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, LogsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	ev := f.events()
	writeHistory(t, dir, ev)
	p := checkers.Params{Store: f.store, Recipe: f.recipe, Nodes: f.cands[:], LeaseTTL: checkers.Duration(2 * time.Second),
		WriteInterval: checkers.Duration(50 * time.Millisecond), OutputDir: dir, PorcupineTimeout: checkers.Duration(20 * time.Second),
		Library: f.library}
	res, err := checkers.Check(context.Background(), ev, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteResults(dir, res); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"splitbrain": "(devel)", "run_id": "sb-fixture", "started": f.started,
		"replay": "splitbrain run --store " + f.store + " --recipe " + f.recipe + " --nemesis " + f.nemesis + " --seed 42",
		"flags": map[string]any{"store": f.store, "recipe": f.recipe, "nodes": 3, "time": "10s", "ttl": "2s", "write_interval": "50ms",
			"workload": firstNonEmpty(f.workload, "steady"), "resource": map[bool]string{false: "fenced", true: "unfenced"}[f.unfenced], "nemesis": f.nemesis, "seed": 42, "profile": "local"},
		"images":        map[string]string{"etcd": "splitbrain.local/etcd:abc123"},
		"store_version": "3.6.5", "store_nodes": []string{"etcd-1", "etcd-2", "etcd-3"},
		"store_reuse": "reused from run sb-earlier, 2nd use",
		"seed":        42, "schedule": f.schedule, "workload": "steady: leader writes every 50ms",
		"recipe_timing": map[string]any{"ttl": "2s", "renew": "666.666666ms", "retry": "500ms", "negative": f.negative}, "check": p,
	}
	b, _ := json.MarshalIndent(cfg, "", " ")
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, LogsDir, f.cands[0]+".log"), []byte("hello <script>alert(1)</script>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return res
}

func writeHistory(t testing.TB, dir string, ev []history.Event) {
	t.Helper()
	fh, err := os.Create(filepath.Join(dir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(fh)
	for i := range ev {
		if err := enc.Encode(&ev[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}
