//go:build chaos

package explore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/progress"
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
		StoreRoot: root, TestName: "explore", Progress: testWriter{t}, ProgressMode: progress.ProgressQuiet}
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
