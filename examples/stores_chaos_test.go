//go:build chaos

package examples

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/checkers/lint"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
)

// storeExamples are the example candidates of examples/stores, each written from its store's
// part of docs/candidates.md section 8, with the one leader fault each runs under: the leader
// cut off from its store (from its peers with store none) on its third write, once, for 3×TTL.
var storeExamples = []struct{ store, fault string }{
	{"kubernetes", "partition:shape=leader-from-store,mode=drop,on=write:3,for=3xTTL,count=1"},
	{"redis-multi", "partition:shape=leader-from-store,mode=drop,on=write:3,for=3xTTL,count=1"},
	{"consul", "partition:shape=leader-from-store,mode=drop,on=write:3,for=3xTTL,count=1"},
	{"dynamodb", "partition:shape=leader-from-store,mode=drop,on=write:3,for=3xTTL,count=1"},
	{"none", "partition:shape=isolate,mode=drop,on=write:3,for=3xTTL,count=1"},
}

// TestStoreExamples builds each store example static and runs it as `splitbrain run
// --candidate-cmd` would, on its real store (real servers, real iptables rules), on the
// first try, twice: fault-free with the handoff workload (each leader gets SIGTERM on its
// fifth accepted write, two handoffs), where `candidate check`'s linter must find no contract problem, and under the
// leader fault, where the cut-off leader must stop believing within TTL + 1 s (what
// `candidate check --cut-leader` checks). Both runs must be judged valid, with elections and
// accepted writes.
func TestStoreExamples(t *testing.T) {
	store := t.TempDir()
	if d := os.Getenv("SPLITBRAIN_STORE_DIR"); d != "" {
		store = d
	}
	bin := t.TempDir()
	for _, ex := range storeExamples {
		exe := filepath.Join(bin, ex.store)
		cmd := exec.Command("go", "build", "-trimpath", "-o", exe, "./stores/"+ex.store)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./stores/%s: %v\n%s", ex.store, err, out)
		}
		for _, fault := range []string{"none", ex.fault} {
			name := ex.store + "/fault-free"
			if fault != "none" {
				name = ex.store + "/leader-fault"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				// Both phases end on events: the fault healed (or two handoffs happened) and a
				// leader had writes accepted after it; FaultTime is only their timeout.
				cfg := harness.Config{Store: ex.store, CandidateCmd: exe, Nodes: 3, Nemesis: fault,
					FaultTime: time.Minute, Until: "writes=3", Recovery: 2 * time.Second, StoreRoot: store,
					TestName: "store-example-" + ex.store}
				if fault == "none" {
					cfg.Workload, cfg.Until = "handoff", "handoffs=2,writes=3"
				}
				ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
				defer cancel()
				out, err := harness.Run(ctx, cfg)
				if out == nil {
					t.Fatalf("run did not start: %v", err)
				}
				t.Logf("%s: verdict %s %v, counts %+v, run dir %s", name, out.Verdict, out.Reasons, out.Counts, out.RunDir)
				if err != nil {
					t.Fatalf("run error: %v", err)
				}
				if out.Verdict != harness.VerdictValid {
					t.Errorf("verdict %s, want valid (reasons %v; %v)", out.Verdict, out.Reasons, out.Explanations)
				}
				if out.Counts.Elections < 1 || out.Counts.WritesAccepted < 1 {
					t.Errorf("%d elections and %d accepted writes: the candidate never led", out.Counts.Elections, out.Counts.WritesAccepted)
				}
				if out.Counts.ContractViolations > 0 {
					t.Errorf("%d contract violations", out.Counts.ContractViolations)
				}
				if fault != "none" {
					if out.Counts.FaultsStarted < 1 {
						t.Fatalf("the leader fault never started")
					}
					// The cut-off leader stops believing within TTL + 1 s, as `candidate
					// check --cut-leader` demands (client timeouts below the TTL, R14/R16).
					evs, _, err := history.ReadFile(filepath.Join(out.RunDir, harness.HistoryFile))
					if err != nil {
						t.Fatal(err)
					}
					for _, p := range lint.Check(evs, nil, lint.Options{CutBound: harness.DefaultTTL + time.Second}) {
						if p.Code == "leader-outlives-cut" {
							t.Errorf("candidate check --cut-leader would report:\n%s", lint.Format([]lint.Problem{p}))
						}
					}
				}
				if fault == "none" {
					evs, _, err := history.ReadFile(filepath.Join(out.RunDir, harness.HistoryFile))
					if err != nil {
						t.Fatal(err)
					}
					res, err := checkers.ReadResults(filepath.Join(out.RunDir, checkers.ResultsFile))
					if err != nil {
						t.Fatal(err)
					}
					logs := map[string]string{}
					for _, n := range []string{"c1", "c2", "c3"} {
						b, err := os.ReadFile(filepath.Join(out.RunDir, "logs", n+".log"))
						if err != nil {
							t.Fatal(err)
						}
						logs[n] = string(b)
					}
					// What `candidate check` runs on the same kind of run.
					opts := lint.Options{Store: ex.store, Logs: logs, TakeoverBound: 2*harness.DefaultTTL + time.Second}
					if ps := lint.Check(evs, res, opts); len(ps) > 0 {
						t.Errorf("candidate check would report:\n%s", lint.Format(ps))
					}
					if out.Counts.Elections < 2 {
						t.Errorf("%d elections in a handoff run: the SIGTERMed leader was never followed", out.Counts.Elections)
					}
				}
				eng, err := platform.Connect(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer eng.Close()
				platformtest.AssertNoLeftovers(t, eng, out.RunID)
			})
		}
	}
}
