// A sample for TestFixedSleepsSample: every line with a want comment must be reported, and
// no other. Not compiled (testdata).
package sample

import (
	"context"
	"testing"
	"time"
)

func TestLetItHappen(t *testing.T) {
	start()
	time.Sleep(time.Second) // want: a bare "let it happen" sleep
	for i := 0; i < 10; i++ {
		time.Sleep(100 * time.Millisecond) // want: retries counted, no deadline
	}
	for i := 0; i < 100; i++ {
		println(time.Now().UnixNano())
		time.Sleep(time.Millisecond) // want: a clock reading that is no deadline
	}
	for range 3 {
		time.Sleep(time.Millisecond) // want: a range loop is a fixed sequence of sleeps
	}
	for deadline := time.Now().Add(time.Minute); !done(); {
		if time.Now().After(deadline) {
			t.Fatal("hung")
		}
		if !ready() {
			time.Sleep(time.Millisecond) // want: not the loop's own statement
			continue
		}
	}
	<-time.After(time.Second) // want: a sleep by another name
	select {
	case <-time.After(time.Second): // want: alone in its select, the same
	}
	// sleep:
	time.Sleep(time.Second) // want: an annotation without a reason
	f := time.Sleep         // want: a sleep passed around
	f(time.Second)
	for deadline := time.Now().Add(time.Minute); !done() && time.Now().Before(deadline); {
		go func() { time.Sleep(time.Second) }() // want: inside a function literal in the loop
	}
}

func TestPolls(t *testing.T) {
	for deadline := time.Now().Add(time.Minute); !done(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("hung")
		}
	}
	deadline := time.Now().Add(time.Minute)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("hung")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil && !done() {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-time.After(time.Minute): // a timeout, not a sleep
	case <-ctx.Done():
	}
}

func TestAnnotated(t *testing.T) {
	// sleep: an absence check over the protocol's six periods; a loaded machine can only
	// hide a bug here, not fail a correct implementation.
	time.Sleep(30 * time.Millisecond)
	time.Sleep(time.Millisecond) // sleep: models a slow device; nothing waits on it
}

func start()      {}
func done() bool  { return true }
func ready() bool { return true }
