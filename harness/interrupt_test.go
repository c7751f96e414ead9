package harness

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// A signal that lands while the run tears down (the lifecycle itself completed) must still
// end the run as interrupted: the history's run-end names it, so the verdict is unknown and
// the CLI exits 255 (docs/reliability.md, Interrupts).
func TestSignalDuringTeardownEndsRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	path := filepath.Join(t.TempDir(), HistoryFile)
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{root: ctx, log: newJournalOn(w)}
	cancel(errors.New("interrupt signal received"))
	r.finish("") // the lifecycle finished in order; the signal came during teardown

	events, _, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		t.Fatal("no events recorded")
	}
	last := events[len(events)-1]
	if last.Kind != history.KindRunEnd || !strings.Contains(last.Reason, "cancelled during teardown") || !strings.Contains(last.Reason, "interrupt signal received") {
		t.Errorf("last event %s %q, want run-end naming the teardown interrupt", last.Kind, last.Reason)
	}
	if r.finishReason != last.Reason {
		t.Errorf("finishReason %q, want %q (the summary and results read it)", r.finishReason, last.Reason)
	}
	var phases []string
	for _, e := range events {
		if e.Kind == history.KindPhase {
			phases = append(phases, e.Phase)
		}
	}
	if strings.Join(phases, ",") != history.PhaseTeardown {
		t.Errorf("phases %v: a run that completed in order must not heal again, only tear down", phases)
	}
}

// Without a signal, a completed run's run-end carries no reason.
func TestCompletedRunEndsWithoutReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), HistoryFile)
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{root: context.Background(), log: newJournalOn(w)}
	r.finish("")
	events, _, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if last := events[len(events)-1]; last.Kind != history.KindRunEnd || last.Reason != "" {
		t.Errorf("last event %s %q, want run-end without a reason", last.Kind, last.Reason)
	}
}

// The first Ctrl-C's hint names the run and the exact clean-up command for after a second one.
func TestInterruptHintNamesCleanup(t *testing.T) {
	h := interruptHint(errors.New("interrupt signal received"), "sb-123")
	for _, want := range []string{"interrupt signal received", "healing faults", "second Ctrl-C", "splitbrain clean --run sb-123"} {
		if !strings.Contains(h, want) {
			t.Errorf("hint %q lacks %q", h, want)
		}
	}
	// In a matrix the pooled store clusters (and their networks) carry their own ids.
	h = interruptHint(errors.New("interrupt signal received"), "sb-123", "pool-a", "pool-b")
	if !strings.Contains(h, "splitbrain clean --run sb-123 && splitbrain clean --run pool-a && splitbrain clean --run pool-b") {
		t.Errorf("hint %q does not clean the pooled clusters", h)
	}
	var pool *StorePool
	if pool.IDs() != nil {
		t.Error("no pool, no ids")
	}
	pool = &StorePool{leased: map[*poolEntry]bool{{id: "pool-b"}: true}, idle: []*poolEntry{{id: "pool-a"}}}
	if got := pool.IDs(); strings.Join(got, " ") != "pool-a pool-b" {
		t.Errorf("pool ids %v, want the idle and the leased cluster", got)
	}
}
