package harness

import (
	"context"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

func write(node, result string) history.Event {
	return history.Event{Source: history.SourceCandidate, Kind: history.KindWrite, Node: node, Result: result}
}

// The handoff workload's pace: a leader's accepted writes count from its election; rejected
// and unknown writes, other believers' writes and writes before the election do not.
func TestWaitLeaderWrites(t *testing.T) {
	s := NewLiveState()
	// A cancelled context makes WaitLeaderWrites a probe: it still returns a leader that has
	// its writes, and ctx's error otherwise.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	probe := func(n int) string {
		node, _, err := s.WaitLeaderWrites(done, n)
		if err != nil {
			return ""
		}
		return node
	}
	s.Observe(write("c1", history.ResultAccepted)) // not yet elected
	s.Observe(ev(history.KindElected, "c1", 3))
	if got := probe(1); got != "" {
		t.Fatalf("a write before the election counted: %q", got)
	}
	s.Observe(write("c1", history.ResultAccepted))
	s.Observe(write("c1", history.ResultRejected))
	s.Observe(write("c1", history.ResultUnknown))
	if got := probe(2); got != "" {
		t.Fatalf("rejected or unknown writes counted: %q", got)
	}
	if got := probe(1); got != "c1" {
		t.Fatalf("probe(1) = %q, want c1", got)
	}

	// A waiter wakes on the write that completes the count, for the leader of that moment.
	got := make(chan string, 1)
	go func() {
		node, token, err := s.WaitLeaderWrites(context.Background(), 2)
		if err != nil || token != 5 {
			node = "error"
		}
		got <- node
	}()
	s.Observe(ev(history.KindElected, "c2", 5)) // c2 is the leader now, from 0 writes
	s.Observe(write("c1", history.ResultAccepted))
	s.Observe(write("c2", history.ResultAccepted))
	if p := probe(2); p != "" {
		t.Fatalf("the old believer's writes counted for the new leader: %q", p)
	}
	s.Observe(write("c2", history.ResultAccepted))
	select {
	case n := <-got:
		if n != "c2" {
			t.Fatalf("woke with %q, want c2 (token 5)", n)
		}
	case <-time.After(time.Minute): // only ends a hung test
		t.Fatal("the waiter did not wake on c2's second accepted write")
	}

	// A re-election counts from zero again; an exit ends the count.
	s.Observe(ev(history.KindElected, "c2", 7))
	if p := probe(1); p != "" {
		t.Fatalf("writes of c2's previous tenure counted: %q", p)
	}
	s.Observe(write("c2", history.ResultAccepted))
	s.Observe(history.Event{Kind: history.KindProcessExit, Node: "c2"})
	if p := probe(1); p == "c2" {
		t.Fatal("an exited leader is still handed back")
	}
}
