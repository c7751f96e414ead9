//go:build chaos

package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// A run whose schedule has a delay routes its candidates through the fault proxy, and a
// cancel in the middle of the delay (an interrupt) heals it and removes the proxy container
// with everything else. A run without one keeps direct connections.
func TestRunDelayInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(runCtx(t))
	defer cancel()
	cfg := baseConfig(t, "redis", "redis-setnx")
	cfg.StoreRoot = t.TempDir()
	cfg.FaultTime = time.Minute
	cfg.Nemesis = "delay:target=leader,latency=300ms,at=0s,for=40s,count=1"
	runDone := make(chan struct{})
	go func() {
		defer cancel()
		// Cancel once the delayed leader has been heard from under the delay: it talks to
		// its store through the proxy while the fault is in effect.
		waitForEvents(cfg.StoreRoot, time.Now().Add(6*time.Minute), runDone, func(evs []history.Event) bool {
			var start *history.Event
			for i, e := range evs {
				if e.Kind == history.KindFaultStart && len(e.Targets) == 1 {
					start = &evs[i]
				}
				if start != nil && e.Source == history.SourceCandidate && e.Node == start.Targets[0] && e.T > start.T {
					return true
				}
			}
			return false
		})
	}()
	out, err := Run(ctx, cfg)
	close(runDone)
	if err == nil {
		t.Fatal("cancelled run returned no error")
	}
	assertNoLeftovers(t, out.RunID) // the store-proxy container included
	evs, _, rerr := history.ReadFile(filepath.Join(out.RunDir, HistoryFile))
	if rerr != nil {
		t.Fatal(rerr)
	}
	var starts, ends int
	for _, e := range evs {
		switch e.Kind {
		case history.KindFaultStart:
			starts++
			if e.Err != "" || e.Fault != "delay" {
				t.Errorf("fault-start %+v", e)
			}
		case history.KindFaultEnd:
			ends++
			if e.Err != "" {
				t.Errorf("delay heal failed: %s", e.Err)
			}
		}
	}
	if starts != 1 || ends != 1 {
		t.Fatalf("%d fault-start, %d fault-end; want the delay applied and healed once", starts, ends)
	}
	log, _ := os.ReadFile(filepath.Join(out.RunDir, LogsDir, "harness.log"))
	if !strings.Contains(string(log), "store fault proxy ready") || !strings.Contains(string(log), "store-proxy:20000") {
		t.Errorf("harness log does not show the candidates routed through the proxy:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(out.RunDir, LogsDir, "store-proxy.log")); err != nil {
		t.Errorf("no store-proxy log: %v", err)
	}
}
