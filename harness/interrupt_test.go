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
	h := interruptHint(errors.New("interrupt signal received"), []string{"sb-123"}, nil)
	for _, want := range []string{"interrupt signal received", "healing faults and removing run sb-123;", "second Ctrl-C", "(then remove what is left with: splitbrain clean --run sb-123)"} {
		if !strings.Contains(h, want) {
			t.Errorf("hint %q lacks %q", h, want)
		}
	}
	// In a matrix the pooled store clusters (and their networks) carry their own ids.
	h = interruptHint(errors.New("interrupt signal received"), []string{"sb-123"}, []string{"pool-a", "pool-b"})
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

// Runs at once (assess, matrix --parallel) get one hint for the whole process on the first
// Ctrl-C: every interrupted run first, then every pool they lease from (a pool's network
// cannot go while a run's containers are attached); a run whose context did not end is not
// named, and gets its own hint when it ends.
func TestOneInterruptHintForRunsAtOnce(t *testing.T) {
	var l liveRuns
	root, cancel := context.WithCancelCause(context.Background())
	child, stopChild := context.WithCancel(root)
	defer stopChild()
	other, cancelOther := context.WithCancelCause(context.Background())
	pool := &StorePool{leased: map[*poolEntry]bool{{id: "pool-b"}: true, {id: "pool-a"}: true}}
	a := l.add(root, "run-a", pool)
	b := l.add(child, "run-b", pool)
	c := l.add(other, "run-c", nil)
	cause := errors.New("interrupt signal received")
	cancel(cause)
	h := l.hint(b)
	want := "healing faults and removing runs run-a, run-b; a second Ctrl-C stops at once and skips cleanup (then remove what is left with: " +
		"splitbrain clean --run run-a && splitbrain clean --run run-b && splitbrain clean --run pool-a && splitbrain clean --run pool-b)"
	if !strings.HasPrefix(h, "splitbrain: interrupt signal received: ") || !strings.Contains(h, want) || strings.Contains(h, "run-c") {
		t.Errorf("hint %q\nwant one naming run-a and run-b, then both pools, not run-c", h)
	}
	if h := l.hint(a); h != "" {
		t.Errorf("a second hint for the same interrupt: %q", h)
	}
	l.remove(a)
	l.remove(b)
	cancelOther(errors.New("deadline"))
	if h := l.hint(c); !strings.Contains(h, "removing run run-c;") || !strings.HasSuffix(h, "(then remove what is left with: splitbrain clean --run run-c)") {
		t.Errorf("the other run's own hint: %q", h)
	}
}
