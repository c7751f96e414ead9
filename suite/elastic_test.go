package suite

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/splitbrain-chaos/splitbrain/harness"
)

// spareProbe is a probe whose reading the test sets (cores idle, in hundredths).
type spareProbe struct{ hundredths atomic.Int64 }

func (p *spareProbe) set(cores float64)     { p.hundredths.Store(int64(cores * 100)) }
func (p *spareProbe) read() (float64, bool) { return float64(p.hundredths.Load()) / 100, true }
func newIdle(extra int, p *spareProbe) *idleSlots {
	return &idleSlots{extra: extra, probe: p.read, tick: idleTick, say: func(string, ...any) {}}
}

// The lender lends its extra slots one at a time while the cores idle, and takes each back
// when a row ends after they have turned busy; it lends nothing while a build runs.
func TestIdleSlotsLendWhileIdleTakeBackWhenBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &spareProbe{}
		p.set(1.2)
		s := newIdle(2, p)
		building := atomic.Bool{}
		building.Store(true)
		s.allowed = func() bool { return !building.Load() }
		sem := semaphore.NewWeighted(1 + 2) // n = 1
		ctx, cancel := context.WithCancel(context.Background())
		done := s.start(ctx, sem)
		// sleep: the lender reads the probe once a second on the bubble's clock.
		time.Sleep(30 * time.Second)
		if sem.TryAcquire(2) {
			t.Fatal("lent a slot while a build ran")
		}
		building.Store(false)
		// sleep: past one window (3 s), one lend, and idleSettle before the second.
		time.Sleep(idleWindow + idleTick)
		if !sem.TryAcquire(2) {
			t.Fatal("one window of idle cores after the build: no slot lent")
		}
		if sem.TryAcquire(1) {
			t.Fatal("a second slot lent before idleSettle had passed")
		}
		sem.Release(2)
		// sleep: long enough for the second lend.
		time.Sleep(idleSettle + idleWindow + idleTick)
		if !sem.TryAcquire(3) { // n and both lent: three rows run
			t.Fatal("idle cores for 10 s: both extra slots should be lent")
		}
		if s.mostLent() != 2 {
			t.Errorf("mostLent %d, want 2", s.mostLent())
		}
		p.set(0.05) // busy: the lender waits for rows to end and keeps their slots
		// sleep: one window of busy readings.
		time.Sleep(idleWindow + idleTick)
		sem.Release(1) // a row ends
		synctest.Wait()
		if sem.TryAcquire(1) {
			t.Fatal("busy cores: the slot a row left should have gone back to the lender")
		}
		// sleep: the next window of busy readings.
		time.Sleep(idleWindow + idleTick)
		sem.Release(1)
		synctest.Wait()
		if sem.TryAcquire(1) {
			t.Fatal("busy cores: the second lent slot should have gone back too")
		}
		sem.Release(1) // the last row ends: n's own slot is free again
		synctest.Wait()
		if !sem.TryAcquire(1) {
			t.Fatal("the lender took more than it had lent")
		}
		sem.Release(1)
		cancel()
		<-done
		if !sem.TryAcquire(3) {
			t.Error("stopped: the lender did not give its slots back")
		}
	})
}

// A probe that cannot measure lends nothing.
func TestIdleSlotsLendNothingUnmeasured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &idleSlots{extra: 1, probe: func() (float64, bool) { return 2, false }, allowed: func() bool { return true }, tick: idleTick, say: func(string, ...any) {}}
		sem := semaphore.NewWeighted(2)
		ctx, cancel := context.WithCancel(context.Background())
		done := s.start(ctx, sem)
		// sleep: a minute of the bubble's clock, readings failing.
		time.Sleep(time.Minute)
		if sem.TryAcquire(2) {
			t.Error("lent a slot without a reading")
		}
		cancel()
		<-done
	})
}

// In the scheduler: idle cores let rows beyond n run, busy ones never do.
func TestScheduleRunsExtraRowsOnlyWhileIdle(t *testing.T) {
	for _, tc := range []struct {
		spare    float64
		wantPeak int
	}{{1.5, 4}, {0.1, 2}} {
		t.Run(fmt.Sprint(tc.spare), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var cases []Case
				for i := range 12 {
					cases = append(cases, Case{Name: fmt.Sprint(i), Config: harness.Config{Store: fmt.Sprint("s", i)}})
				}
				p := &spareProbe{}
				p.set(tc.spare)
				cnt := &counter{mu: &sync.Mutex{}}
				schedule(context.Background(), cases, 2, newIdle(2, p), nil, nil, cnt.run(20*time.Second),
					func(int, Case, error) { t.Error("skipped") }, func(string, ...any) {})
				if cnt.peak != tc.wantPeak {
					t.Errorf("%.1f cores idle: peak %d rows at once, want %d", tc.spare, cnt.peak, tc.wantPeak)
				}
				if len(cnt.order) != len(cases) {
					t.Errorf("ran %d of %d", len(cnt.order), len(cases))
				}
			})
		})
	}
}

// The sampler reads idle and iowait against every field up to steal, as cores.
func TestCPUSamplerSpareCores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &cpuSampler{path: path, ncpu: 2}
	write("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3\n")
	if _, ok := s.spare(); ok {
		t.Fatal("first reading has nothing to compare with")
	}
	// 200 jiffies more, of which 50 idle and 0 iowait: a quarter idle of two cores.
	write("cpu  200 0 150 750 100 0 0 0 0 0\n")
	v, ok := s.spare()
	if !ok || math.Abs(v-0.5) > 1e-9 {
		t.Fatalf("spare = %v, %v; want 0.5 cores", v, ok)
	}
	write("intr 5\n")
	if _, ok := s.spare(); ok {
		t.Error("a file without the cpu line gave a reading")
	}
	write("cpu  200 x 150 750 100\n")
	if _, _, err := readCPUTimes(path); err == nil {
		t.Error("a bad field was not an error")
	}
}

// Nothing is lent while the full binary builds beside the rows, also at two at once, where no
// slot is held back for the build: the cores it would find idle are the build's.
func TestScheduleLendsNothingWhileBuilding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cases []Case
		for i := range 12 {
			cases = append(cases, Case{Name: fmt.Sprint(i), Config: harness.Config{Store: "etcd"}})
		}
		pk := &buildPeaks{mu: &sync.Mutex{}}
		gate := &fakeGate{mu: pk.mu, running: &pk.running, built: map[string]bool{"tools": true, "etcd": true}}
		ready := make(chan struct{})
		var built bool
		pk.built = func() bool { return built }
		go func() {
			// sleep: the full binary takes 30 s on the bubble's clock.
			time.Sleep(30 * time.Second)
			pk.mu.Lock()
			built = true
			pk.mu.Unlock()
			close(ready)
		}()
		p := &spareProbe{}
		p.set(1.5)
		schedule(context.Background(), cases, 2, newIdle(1, p), gate, ready, pk.run(10*time.Second),
			func(int, Case, error) { t.Error("skipped") }, func(string, ...any) {})
		if pk.during != 2 || pk.after != 3 {
			t.Errorf("%d rows at once while the full binary built and %d after, want 2 and 3", pk.during, pk.after)
		}
	})
}
