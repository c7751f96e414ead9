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
	case <-time.After(2 * time.Second):
		t.Fatal("lost not cancelled after a failed check")
	}
	if cause := context.Cause(lost); !errors.Is(cause, refused) {
		t.Fatalf("cause %v, want %v", cause, refused)
	}
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
	var calls atomic.Int32
	lost, stop := Monitor(10*time.Millisecond, func(ctx context.Context) error {
		calls.Add(1)
		return nil
	})
	time.Sleep(105 * time.Millisecond)
	stop()
	if n := calls.Load(); n < 5 || n > 11 {
		t.Fatalf("%d checks in ~105ms at a 10ms period, want 5..11", n)
	}
	if lost.Err() != nil {
		t.Fatal("lost cancelled though every check succeeded")
	}
}
