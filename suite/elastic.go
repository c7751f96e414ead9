package suite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Rows beyond --parallel while the cores idle (Options.IdleExtra). A tier's rows differ in
// what they ask of the CPU: JVM clusters and Pacemaker saturate two cores, a redis row whose
// leader is paused for 6 s hardly uses a tenth of one, and seven rows waiting out TTLs left a
// quarter of the machine idle for minutes of a default tier (docs/performance.md, "Rows while
// the cores idle"). A fixed eighth row cost more than it gave where the cores were busy, so
// the extra rows are lent only while the cores are measured idle and taken back once they are
// busy.
const (
	// idleLendCores: spare cores, averaged over idleWindow, at which another row may start.
	idleLendCores = 0.5
	// idleReclaimCores: below this (averaged over idleWindow) a lent slot is taken back: the
	// next row to end is not replaced.
	idleReclaimCores = 0.15
	idleWindow       = 3 * time.Second
	idleTick         = time.Second
	// idleSettle: after a lend, how long before the next may follow; a row's setup (containers,
	// a cluster) takes a second or two to show on the CPU.
	idleSettle = 6 * time.Second
)

// cpuSampler reads the machine's spare cores from /proc/stat.
type cpuSampler struct {
	path              string
	ncpu              float64
	lastIdle, lastAll uint64
	primed            bool
}

func newCPUSampler() *cpuSampler {
	return &cpuSampler{path: "/proc/stat", ncpu: float64(runtime.NumCPU())}
}

// spare returns the cores idle since the previous call (false on the first call or when
// /proc/stat cannot be read: no measure, no lending).
func (s *cpuSampler) spare() (float64, bool) {
	idle, all, err := readCPUTimes(s.path)
	if err != nil {
		return 0, false
	}
	dIdle, dAll := idle-s.lastIdle, all-s.lastAll
	ok := s.primed && all > s.lastAll && idle >= s.lastIdle
	s.lastIdle, s.lastAll, s.primed = idle, all, true
	if !ok || dAll == 0 {
		return 0, false
	}
	return float64(dIdle) / float64(dAll) * s.ncpu, true
}

// readCPUTimes returns the idle (idle + iowait) and total jiffies of /proc/stat's cpu line.
func readCPUTimes(path string) (idle, all uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return 0, 0, err
	}
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("%s: first line %q is not the cpu line", path, strings.TrimSpace(line))
	}
	for i, f := range fields[1:] {
		if i == 8 { // guest and guest_nice are already in user and nice
			break
		}
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: cpu field %d: %w", path, i+1, err)
		}
		all += v
		if i == 3 || i == 4 {
			idle += v
		}
	}
	return idle, all, nil
}

// idleSlots holds extra of sem's permits and lends them, one at a time, while the cores idle:
// spare cores (a probe, one reading per tick) averaged over idleWindow at least idleLendCores,
// idleSettle after the last lend, and allowed() (no build in the background). When the
// average falls below idleReclaimCores it takes a lent permit back, which waits for a row to
// end.
type idleSlots struct {
	sem     *semaphore.Weighted
	extra   int
	probe   func() (float64, bool)
	allowed func() bool
	tick    time.Duration
	say     func(string, ...any)

	mu  sync.Mutex
	max int // the most lent at once, for the summary
}

// start takes the extra permits of sem, which the caller sized for n + extra rows, before any
// row can, and lends them in the background until ctx ends; the returned channel is closed
// once the lender has given back every permit it still holds.
func (s *idleSlots) start(ctx context.Context, sem *semaphore.Weighted) <-chan struct{} {
	done := make(chan struct{})
	if !sem.TryAcquire(int64(s.extra)) {
		close(done) // cannot happen on a fresh semaphore; lend nothing rather than race the rows
		return done
	}
	s.sem = sem
	go func() {
		defer close(done)
		s.run(ctx)
	}()
	return done
}

func (s *idleSlots) run(ctx context.Context) {
	held := s.extra
	defer func() { s.sem.Release(int64(held)) }()
	window := max(1, int(idleWindow/s.tick))
	var readings []float64
	var lastLend time.Time
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v, ok := s.probe()
		if !ok {
			readings = readings[:0]
			continue
		}
		readings = append(readings, v)
		if len(readings) > window {
			readings = readings[1:]
		}
		if len(readings) < window {
			continue
		}
		avg := 0.0
		for _, r := range readings {
			avg += r
		}
		avg /= float64(len(readings))
		switch {
		case held > 0 && avg >= idleLendCores && time.Since(lastLend) >= idleSettle && (s.allowed == nil || s.allowed()):
			s.sem.Release(1)
			held--
			lastLend = time.Now()
			s.setLent(s.extra - held)
			s.say("matrix: %.1f cores idle: one more row at once (%d beyond --parallel)\n", avg, s.extra-held)
			readings = readings[:0] // the next decision sees the new row
		case held < s.extra && avg < idleReclaimCores:
			if err := s.sem.Acquire(ctx, 1); err != nil {
				return
			}
			held++
			s.setLent(s.extra - held)
			readings = readings[:0]
		}
	}
}

func (s *idleSlots) setLent(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.max = max(s.max, n)
}

// mostLent is the most rows that ran beyond --parallel at once.
func (s *idleSlots) mostLent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}
