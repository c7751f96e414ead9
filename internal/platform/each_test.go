package platform

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestEachRunsAllAndJoinsEveryError(t *testing.T) {
	var ran atomic.Int32
	err := Each(5, 0, func(i int) error {
		ran.Add(1)
		if i%2 == 1 {
			return errors.New("node " + string(rune('0'+i)) + " failed")
		}
		return nil
	})
	if ran.Load() != 5 {
		t.Fatalf("ran %d of 5: an error must not stop the others", ran.Load())
	}
	if err == nil || !strings.Contains(err.Error(), "node 1 failed") || !strings.Contains(err.Error(), "node 3 failed") {
		t.Fatalf("error %v, want both failures named", err)
	}
	if Each(3, 0, func(int) error { return nil }) != nil {
		t.Fatal("no failures must give nil")
	}
}

// In a synctest bubble the workers' sleep ends only when every goroutine is blocked, so
// all the workers the limit lets in are inside at once: the peak is exactly the limit.
func TestEachHonoursLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var now, peak atomic.Int32
		Each(8, 2, func(int) error {
			n := now.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			// sleep: the bubble's clock: holds the worker's slot until every worker let in
			// has started.
			time.Sleep(10 * time.Millisecond)
			now.Add(-1)
			return nil
		})
		if peak.Load() != 2 {
			t.Fatalf("peak concurrency %d, want the limit 2", peak.Load())
		}
	})
}
