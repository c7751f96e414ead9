//go:build chaos

package harness

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// runIDOf waits for the run under root to write its config and returns its run id.
func runIDOf(root string, until time.Time) string {
	for time.Now().Before(until) {
		paths, _ := filepath.Glob(filepath.Join(root, "*", "*", ConfigFile))
		for _, p := range paths {
			var c struct {
				RunID string `json:"run_id"`
			}
			if b, err := os.ReadFile(p); err == nil && json.Unmarshal(b, &c) == nil && c.RunID != "" {
				return c.RunID
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ""
}

// waitForEvents polls the history of the run under root until cond holds for its events so
// far (a test waits on what the run did, not on a guess of how long it takes), until the
// deadline or until stop is closed; it returns those events and whether cond held.
func waitForEvents(root string, until time.Time, stop <-chan struct{}, cond func([]history.Event) bool) ([]history.Event, bool) {
	for time.Now().Before(until) {
		paths, _ := filepath.Glob(filepath.Join(root, "*", "*", HistoryFile))
		for _, p := range paths {
			// The writer flushes whole lines; a cut last line is left out (TruncatedTail).
			if evs, _, err := history.ReadFile(p); err == nil && cond(evs) {
				return evs, true
			}
		}
		select {
		case <-stop:
			return nil, false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil, false
}

// TestRunContainerRemoved removes containers of a live run by hand (`docker rm -f`, as a
// careless user would): the history must record each disappearance as node-exit at the
// engine's time, and the verdict must not be valid.
func TestRunContainerRemoved(t *testing.T) {
	cases := []struct {
		name     string
		filter   string   // extra label filter selecting what to remove; "" = every container of the run
		wantLost []string // nodes that must have a node-exit
		resource string   // ResourceEnv: the resource runs in a container only where asked to
	}{
		{"redis", platform.LabelNode + "=redis", []string{"redis"}, ""},
		{"resource", platform.LabelNode + "=resource", []string{"resource"}, "container"},
		{"everything", "", []string{"redis", "resource", "c1", "c2", "c3"}, "container"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(ResourceEnv, tc.resource)
			cfg := baseConfig(t, "redis", "redis-setnx")
			cfg.StoreRoot = t.TempDir()
			cfg.FaultTime = 10 * time.Second
			var removedAt, removedBy int64
			go func() {
				until := time.Now().Add(10 * time.Minute)
				id := runIDOf(cfg.StoreRoot, until)
				// Remove once the run is in its fault phase and a write went through there.
				if id == "" {
					return
				}
				if _, ok := waitForEvents(cfg.StoreRoot, until, nil, func(evs []history.Event) bool {
					var faults int64
					for _, e := range evs {
						if e.Kind == history.KindPhase && e.Phase == "faults" {
							faults = e.T
						}
						if faults > 0 && e.Kind == history.KindDecision && e.Result == history.ResultAccepted && e.T > faults {
							return true
						}
					}
					return false
				}); !ok {
					return
				}
				args := []string{"ps", "-q", "--filter", "label=" + platform.LabelRun + "=" + id}
				if tc.filter != "" {
					args = append(args, "--filter", "label="+tc.filter)
				}
				ids, err := exec.Command("docker", args...).Output()
				if err != nil || len(strings.Fields(string(ids))) == 0 {
					t.Errorf("no container to remove (%v)", err)
					return
				}
				removedAt = history.Now()
				if b, err := exec.Command("docker", append([]string{"rm", "-f"}, strings.Fields(string(ids))...)...).CombinedOutput(); err != nil {
					t.Errorf("docker rm -f: %v: %s", err, b)
				}
				removedBy = history.Now()
			}()
			out, err := Run(runCtx(t), cfg)
			if out == nil {
				t.Fatalf("no outcome: %v", err)
			}
			assertNoLeftovers(t, out.RunID)
			evs, _, rerr := history.ReadFile(filepath.Join(out.RunDir, HistoryFile))
			if rerr != nil {
				t.Fatal(rerr)
			}
			if removedAt == 0 {
				t.Fatal("nothing was removed")
			}
			for _, node := range tc.wantLost {
				var got *history.Event
				for i := range evs {
					if evs[i].Kind == history.KindNodeExit && evs[i].Node == node {
						got = &evs[i]
						break
					}
				}
				if got == nil {
					t.Errorf("no node-exit for %s", node)
					continue
				}
				// The engine's time lies inside the removal: the engine stamps the container's
				// end before `docker rm -f` returns (FromWall's conversion errs by microseconds).
				const conversion = 10 * time.Millisecond
				if got.T < removedAt || got.T > removedBy+int64(conversion) {
					t.Errorf("node-exit of %s at %v after the removal started, outside the removal (it took %v)", node, time.Duration(got.T-removedAt), time.Duration(removedBy-removedAt))
				}
				t.Logf("node-exit %s: %q, %v after the removal started", node, got.Reason, time.Duration(got.T-removedAt))
			}
			if out.Verdict == "valid" {
				t.Errorf("verdict valid after %s was removed; reasons %v", tc.name, out.Reasons)
			}
			t.Logf("verdict %s, reasons %v, run error %v", out.Verdict, out.Reasons, err)
		})
	}
}
