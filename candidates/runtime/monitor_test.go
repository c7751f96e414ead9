package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The monitor tests run in a synctest bubble: its clock moves only when every goroutine of
// the bubble is blocked, so a tick comes exactly on its period and "no check for six more
// periods" is a fact, not a hope about a loaded machine.

func TestMonitorFailureBecomesCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		refused := errors.New("renew refused")
		lost, stop := Monitor(5*time.Millisecond, func(ctx context.Context) error {
			if calls.Add(1) == 3 {
				return refused
			}
			return nil
		})
		defer stop()
		<-lost.Done() // the third tick, 15 ms of the bubble's clock
		if cause := context.Cause(lost); !errors.Is(cause, refused) {
			t.Fatalf("cause %v, want %v", cause, refused)
		}
		// sleep: an absence check on the bubble's clock: six more periods in which a loop
		// that went on after the failure would check six more times.
		time.Sleep(30 * time.Millisecond)
		if n := calls.Load(); n != 3 {
			t.Fatalf("%d checks, want the loop to end at the first failure (3)", n)
		}
	})
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
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		lost, stop := Monitor(10*time.Millisecond, func(ctx context.Context) error {
			calls.Add(1)
			return nil
		})
		// sleep: the bubble's clock: five and a half periods hold exactly five ticks.
		time.Sleep(55 * time.Millisecond)
		if n := calls.Load(); n != 5 {
			stop()
			t.Fatalf("%d checks in 55ms at a 10ms period, want 5", n)
		}
		stop()
		after := calls.Load()
		// sleep: an absence check on the bubble's clock: five periods in which a loop still
		// running after stop returned would check five times.
		time.Sleep(50 * time.Millisecond)
		if n := calls.Load(); n != after {
			t.Fatalf("%d checks after stop returned", n-after)
		}
		if lost.Err() != nil {
			t.Fatal("lost cancelled though every check succeeded")
		}
	})
}
