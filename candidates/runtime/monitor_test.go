package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestMonitorFailureBecomesCause(t *testing.T) {
	var calls atomic.Int32
	refused := errors.New("renew refused")
	lost, stop := Monitor(5*time.Millisecond, func(ctx context.Context) error {
		if calls.Add(1) == 3 {
			return refused
		}
		return nil
	})
	defer stop()
	select {
	case <-lost.Done():
	case <-time.After(time.Minute): // only ends a hung test: three 5 ms ticks
		t.Fatal("lost not cancelled a minute after a failed check")
	}
	if cause := context.Cause(lost); !errors.Is(cause, refused) {
		t.Fatalf("cause %v, want %v", cause, refused)
	}
	// An absence check: six more periods in which a loop that went on would check again. A
	// loaded machine can only hide such a bug, not fail a correct loop.
	time.Sleep(30 * time.Millisecond)
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d checks, want the loop to end at the first failure (3)", n)
	}
}

func TestMonitorStopWaitsAndDoesNotLose(t *testing.T) {
	entered := make(chan struct{}, 1)
	var running atomic.Bool
	lost, stop := Monitor(time.Millisecond, func(ctx context.Context) error {
		running.Store(true)
		defer running.Store(false)
		select {
		case entered <- struct{}{}:
		default:
		}
		<-ctx.Done() // a check blocked on I/O until stop cancels it
		return ctx.Err()
	})
	<-entered
	stop()
	if running.Load() {
		t.Fatal("stop returned while a check was still running")
	}
	if lost.Err() != nil {
		t.Fatalf("stop cancelled lost (cause %v): resigning is not a loss", context.Cause(lost))
	}
	stop() // idempotent
}

func TestMonitorChecksPeriodically(t *testing.T) {
	// Counts checks rather than timing them: a loaded machine may delay ticks, but the
	// loop must keep checking until stopped and never check after stop returns.
	var calls atomic.Int32
	fifth := make(chan struct{})
	lost, stop := Monitor(10*time.Millisecond, func(ctx context.Context) error {
		if calls.Add(1) == 5 {
			close(fifth)
		}
		return nil
	})
	select {
	case <-fifth:
	case <-time.After(time.Minute): // only ends a hung test
		stop()
		t.Fatalf("only %d checks in a minute at a 10ms period", calls.Load())
	}
	stop()
	after := calls.Load()
	time.Sleep(50 * time.Millisecond) // an absence check, as above
	if n := calls.Load(); n != after {
		t.Fatalf("%d checks after stop returned", n-after)
	}
	if lost.Err() != nil {
		t.Fatal("lost cancelled though every check succeeded")
	}
}
