//go:build chaos

package harness

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/reports/runconfig"
)

// shortConfig is a run of about 6 s planned.
func shortConfig(t *testing.T, store, recipe string, pool *StorePool) Config {
	cfg := baseConfig(t, store, recipe)
	cfg.Warmup, cfg.FaultTime, cfg.Recovery = 2*time.Second, 2*time.Second, 2*time.Second
	cfg.StorePool = pool
	return cfg
}

// closePool closes the pool and asserts none of the clusters it ever held is left in Docker.
func closePool(t *testing.T, pool *StorePool, ids *[]string) {
	t.Helper()
	if err := pool.Close(context.Background()); err != nil {
		t.Errorf("close pool: %v", err)
	}
	for _, id := range *ids {
		assertNoLeftovers(t, id)
	}
}

// poolIDs lists the ids of every entry the pool holds now (idle or leased).
func poolIDs(p *StorePool) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, e := range p.idle {
		out = append(out, e.id)
	}
	for e := range p.leased {
		out = append(out, e.id)
	}
	return out
}

func firstToken(evs []history.Event) int64 {
	for _, e := range evs {
		if e.Kind == history.KindElected {
			return e.Token
		}
	}
	return -1
}

func readLog(t *testing.T, runDir, node string) string {
	b, err := os.ReadFile(filepath.Join(runDir, LogsDir, node+".log"))
	if err != nil {
		t.Fatalf("store log of the run: %v", err)
	}
	return string(b)
}

// Two consecutive runs share one cluster; the second sees a wiped store (fence counter and
// term table back to their fresh values) and only its own share of the store log.
func TestPoolReuse(t *testing.T) {
	for _, tc := range []struct{ store, recipe, node, startLine string }{
		{"redis", "redis-setnx", "redis", "Ready to accept connections"},
		{"postgres", "postgres-advisory", "postgres", "database system is ready to accept connections"},
	} {
		t.Run(tc.store, func(t *testing.T) {
			t.Parallel() // a pool of its own; nothing timed
			ctx := runCtx(t)
			pool := NewStorePool()
			var ids []string
			defer closePool(t, pool, &ids)
			out1, evs1 := runAndRead(t, ctx, shortConfig(t, tc.store, tc.recipe, pool))
			ids = append(ids, poolIDs(pool)...)
			out2, evs2 := runAndRead(t, ctx, shortConfig(t, tc.store, tc.recipe, pool))
			ids = append(ids, poolIDs(pool)...)
			for i, o := range []*Outcome{out1, out2} {
				if o.Verdict != VerdictValid {
					t.Errorf("run %d: verdict %s (%v), want valid", i+1, o.Verdict, o.Reasons)
				}
			}
			if len(out1.StoreContainers) == 0 || !slices.Equal(out1.StoreContainers, out2.StoreContainers) {
				t.Fatalf("store containers %v then %v: the cluster was not reused", out1.StoreContainers, out2.StoreContainers)
			}
			if !strings.Contains(out1.StoreReuse, "fresh") || !strings.Contains(out2.StoreReuse, "reused from run "+out1.RunID+", 2nd use") {
				t.Errorf("store reuse notes %q / %q", out1.StoreReuse, out2.StoreReuse)
			}
			rc, err := runconfig.Read(out2.RunDir)
			if err != nil || rc.StoreReuse != out2.StoreReuse {
				t.Errorf("config.json store_reuse %q (%v), want %q", rc.StoreReuse, err, out2.StoreReuse)
			}
			// A fresh store hands out token 1 first: the fence counter / term row is gone.
			if a, b := firstToken(evs1), firstToken(evs2); a != 1 || b != 1 {
				t.Errorf("first election tokens %d (run 1) and %d (run 2), want 1 and 1", a, b)
			}
			if l1, l2 := readLog(t, out1.RunDir, tc.node), readLog(t, out2.RunDir, tc.node); !strings.Contains(l1, tc.startLine) || strings.Contains(l2, tc.startLine) {
				t.Errorf("store logs: run 1 must hold the server start (%q), run 2 must not:\nrun 1: %.300s\nrun 2: %.300s", tc.startLine, l1, l2)
			}
			if st := pool.Stats(); st.Launched != 1 || st.Reused != 1 || st.Discarded != 0 {
				t.Errorf("pool stats %+v, want 1 launched, 1 reused", st)
			}
		})
	}
}

// A run that leaves a store node stopped or SIGSTOPped, or that fails, does not hand its
// cluster on: the cluster is removed and the next run starts a fresh one.
func TestPoolDiscardsUnsoundCluster(t *testing.T) {
	ctx := runCtx(t)
	pool := NewStorePool()
	var ids []string
	defer closePool(t, pool, &ids)
	t.Cleanup(func() { testHookAfterStore = nil })
	leasedNode := func() *poolEntry {
		pool.mu.Lock()
		defer pool.mu.Unlock()
		for e := range pool.leased {
			return e
		}
		return nil
	}
	for _, tc := range []struct {
		name    string
		hook    func(e *poolEntry) error
		wantErr bool
		why     string // in the run log's "not reused (...)"
	}{
		{"stopped-node", func(e *poolEntry) error { return e.cluster.Nodes()[0].Stop(context.Background(), 0) }, false, "is not running"},
		{"sigstopped-server", func(e *poolEntry) error {
			pid, err := e.cluster.Nodes()[0].HostPID(context.Background())
			if err != nil {
				return err
			}
			return syscall.Kill(pid, syscall.SIGSTOP)
		}, false, "are stopped (SIGSTOP)"},
		{"harness-error", func(*poolEntry) error { return os.ErrDeadlineExceeded }, true, "the run ended early"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hooked *poolEntry
			testHookAfterStore = func() error {
				hooked = leasedNode()
				return tc.hook(hooked)
			}
			cfg := shortConfig(t, "redis", "redis-setnx", pool)
			var log bytes.Buffer
			cfg.Progress = io.MultiWriter(cfg.Progress, &log)
			out, err := Run(ctx, cfg)
			testHookAfterStore = nil
			if hooked != nil {
				ids = append(ids, hooked.id)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("run error %v, want error: %v", err, tc.wantErr)
			}
			if out == nil || hooked == nil {
				t.Fatalf("no outcome (%v) or no leased cluster", err)
			}
			assertNoLeftovers(t, out.RunID)
			assertNoLeftovers(t, hooked.id) // the unsound cluster is gone
			if !strings.Contains(log.String(), "is not reused (") || !strings.Contains(log.String(), tc.why) {
				t.Errorf("the run log does not say the cluster was dropped because %q", tc.why)
			}
			if ids := poolIDs(pool); len(ids) != 0 {
				t.Errorf("pool still holds %v after an unsound run", ids)
			}
		})
	}
	if st := pool.Stats(); st.Discarded != 3 || st.Reused != 0 || st.Launched != 3 {
		t.Errorf("pool stats %+v, want 3 launched, 3 discarded, 0 reused", st)
	}
}
