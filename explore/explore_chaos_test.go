//go:build chaos

package explore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// A search over leader pauses finds the unfenced Redis zombie (suite/matrix.yaml) on real
// containers, stops at it, and leaves a run directory whose recorded schedule is the one
// drawn, so replay and shrink start from it.
func TestExploreFindsTheRedisZombie(t *testing.T) {
	root := t.TempDir()
	if r := os.Getenv(harness.EnvStoreDir); r != "" {
		root = filepath.Join(r, "chaos-tests", t.Name())
	}
	vocab, err := NewVocabulary([]string{"pause:target=leader"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	base := harness.Config{Store: "redis", Recipe: "redis-setnx", Nodes: 3, ResourceMode: "unfenced",
		Warmup: 3 * time.Second, FaultTime: 12 * time.Second, Recovery: 3 * time.Second,
		StoreRoot: root, TestName: "explore", Progress: testWriter{t}, ProgressMode: harness.ProgressQuiet}
	var started []string
	res, err := Explore(t.Context(), Options{Base: base, MaxRuns: 4, Vocabulary: vocab, Seed: 1,
		Started: func(i int, spec string, seed int64) {
			t.Logf("try %d: %s seed %d", i, spec, seed)
			started = append(started, spec)
		},
		Each: func(tr Try) { t.Logf("try %d: %s %v %v %v", tr.N, tr.Verdict, tr.Codes, tr.Err, tr.RunDir) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Found == nil || res.Stop != StopFound {
		t.Fatalf("no violation in %d tries (stop %s, tally %v); leader pauses of 1-4xTTL on an unfenced redis-setnx should expose the zombie", len(res.Tries), res.Stop, res.Tally())
	}
	f := res.Found
	if !slices.Contains(f.Codes, "stale-write-accepted") {
		t.Errorf("found %s %v, want stale-write-accepted among the codes", f.Verdict, f.Codes)
	}
	if len(res.Tries) != f.N || len(started) != f.N {
		t.Errorf("search went on after the find: %d tries, %d started, found in try %d", len(res.Tries), len(started), f.N)
	}
	b, err := os.ReadFile(filepath.Join(f.RunDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Flags struct {
			Nemesis string `json:"nemesis"`
			Seed    int64  `json:"seed"`
		} `json:"flags"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	cfg := rec.Flags
	if cfg.Nemesis != f.Spec || cfg.Seed != f.Seed {
		t.Errorf("config.json records nemesis %q seed %d, the try drew %q seed %d", cfg.Nemesis, cfg.Seed, f.Spec, f.Seed)
	}
	if _, err := nemesis.Parse(cfg.Nemesis); err != nil {
		t.Errorf("recorded schedule does not parse: %v", err)
	}
}

// Guided search with no schedule given finds the unfenced Redis zombie on real containers:
// chains start on protocol events, the runs end once the chain healed (--until faults), the
// store cluster is kept between runs, and every run's history gives a signature that grows
// the corpus.
func TestGuidedExploreFindsTheRedisZombie(t *testing.T) {
	root := t.TempDir()
	if r := os.Getenv(harness.EnvStoreDir); r != "" {
		root = filepath.Join(r, "chaos-tests", t.Name())
	}
	vocab, err := NewVocabulary([]string{"pause"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	pool := harness.NewStorePool()
	defer pool.Close(context.WithoutCancel(t.Context()))
	base := harness.Config{Store: "redis", Recipe: "redis-setnx", ResourceMode: "unfenced",
		Warmup: 8 * time.Second, FaultTime: 20 * time.Second, Recovery: 5 * time.Second,
		StoreRoot: root, TestName: "guided", Progress: testWriter{t}, ProgressMode: harness.ProgressQuiet}
	corpus := filepath.Join(t.TempDir(), "corpus.json")
	res, err := Explore(t.Context(), Options{Base: base, MaxRuns: 5, Vocabulary: vocab, Seed: 3,
		MinNodes: 3, MaxNodes: 3, CorpusPath: corpus,
		Configure: func(i int, c *harness.Config) { c.StorePool = pool },
		Each: func(tr Try) {
			t.Logf("try %d: %s → %s %v %v (%v) new %v", tr.N, tr.Spec, tr.Verdict, tr.Codes, tr.Err, tr.Elapsed.Round(time.Second), tr.New)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range res.Tries {
		if tr.Err == nil && !slices.ContainsFunc(tr.Signature, func(f string) bool { return strings.HasPrefix(f, "fault:pause@") }) && tr.Verdict != harness.VerdictUnknown {
			t.Errorf("try %d (%s) ran a pause, its signature has none: %v", tr.N, tr.Verdict, tr.Signature)
		}
	}
	if res.Found == nil {
		t.Fatalf("no violation in %d guided tries (tally %v); a leader paused on its 3rd write past the TTL exposes the zombie", len(res.Tries), res.Tally())
	}
	if !slices.Contains(res.Found.Codes, "stale-write-accepted") {
		t.Errorf("found %v, want stale-write-accepted", res.Found.Codes)
	}
	saved, err := LoadCorpus(corpus)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Tries != len(res.Tries) || len(saved.Entries) == 0 {
		t.Errorf("saved corpus: %d tries, %d entries; the search ran %d", saved.Tries, len(saved.Entries), len(res.Tries))
	}
}
