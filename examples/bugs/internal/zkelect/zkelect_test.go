package zkelect

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestOwnDeadlineCountsFromThePreviousAnsweredProbe(t *testing.T) {
	d := newOwnDeadline(func() time.Duration { return 2 * time.Second })
	t0 := time.Unix(1000, 0)
	if why := d.lost(t0); why == "" {
		t.Fatal("no probe answered yet: the term must not count as held")
	}
	d.answered(t0)
	if why := d.lost(t0.Add(time.Millisecond)); why == "" {
		t.Fatal("one answered probe proves nothing about the ensemble leader's touch: no deadline yet")
	}
	d.answered(t0.Add(500 * time.Millisecond))
	// The deadline is t0 (the previous probe's send time) + 0.99 x 2 s, not the last one's.
	if why := d.lost(t0.Add(1970 * time.Millisecond)); why != "" {
		t.Fatalf("before t0+1.98s the term holds, got %q", why)
	}
	if why := d.lost(t0.Add(1980 * time.Millisecond)); why == "" {
		t.Fatal("at t0+1.98s (previous send + 99 % of the timeout) the term is over")
	}
	// A late answer of an older probe never moves the deadline back.
	d.answered(t0.Add(200 * time.Millisecond))
	d.answered(t0.Add(300 * time.Millisecond))
	if why := d.lost(t0.Add(1970 * time.Millisecond)); why != "" {
		t.Fatalf("an older answer moved the deadline back: %q", why)
	}
}

func TestOwnDeadlineUsesTheNegotiatedTimeoutWhenShorter(t *testing.T) {
	l := &zkLog{}
	if got := l.timeout(2 * time.Second); got != 2*time.Second {
		t.Fatalf("unknown negotiated timeout: want the asked 2s, got %v", got)
	}
	l.Printf("authenticated: id=%d, timeout=%d", int64(7), int32(4000))
	if got := l.timeout(2 * time.Second); got != 2*time.Second {
		t.Fatalf("the server raised it to 4s: count with the asked 2s, got %v", got)
	}
	l.Printf("authenticated: id=%d, timeout=%d", int64(7), int32(1500))
	if got := l.timeout(2 * time.Second); got != 1500*time.Millisecond {
		t.Fatalf("the server lowered it to 1.5s: count with that, got %v", got)
	}
}

func TestOwnDeadlineEstablishedWaitsForTheSecondAnswer(t *testing.T) {
	d := newOwnDeadline(func() time.Duration { return time.Hour })
	done := make(chan error, 1)
	go func() { done <- d.established(context.Background(), context.Background()) }()
	d.answered(time.Now())
	select {
	case err := <-done:
		t.Fatalf("returned after one answer: %v", err)
	default:
	}
	d.answered(time.Now())
	if err := <-done; err != nil {
		t.Fatalf("two answers an hour-long timeout apart: want established, got %v", err)
	}
	disc, cut := context.WithCancelCause(context.Background())
	cut(errors.New("zookeeper session disconnected"))
	e := newOwnDeadline(func() time.Duration { return time.Hour })
	if err := e.established(context.Background(), disc); err == nil {
		t.Fatal("disconnected before the deadline was established: want an error")
	}
}
