package suite

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
)

// fakeGate has images for the stores in built; build records how many runs were going on.
type fakeGate struct {
	mu      *sync.Mutex // shared with the runs, which count themselves in running
	running *int
	built   map[string]bool
	seen    []string // "build <store> beside <n> runs"
}

func (g *fakeGate) unbuilt(c Case) []images.Role {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.built[c.Config.Store] {
		return nil
	}
	return []images.Role{images.Role(c.Config.Store)}
}

func (g *fakeGate) build(ctx context.Context, c Case) error {
	g.mu.Lock()
	g.seen = append(g.seen, fmt.Sprintf("build %s beside %d runs", c.Config.Store, *g.running))
	g.built[c.Config.Store] = true
	g.mu.Unlock()
	return nil
}

// counter is a run func that counts runs going on at once and records their order. The
// schedule tests run in a synctest bubble: a run's sleep ends only once every goroutine is
// blocked, so every run the scheduler admits is running at once, however loaded the machine.
type counter struct {
	mu            *sync.Mutex
	running, peak int
	order         []string
}

func (c *counter) run(d time.Duration) func(int, Case) {
	return func(_ int, cs Case) {
		c.mu.Lock()
		c.running++
		c.peak = max(c.peak, c.running)
		c.order = append(c.order, cs.Name)
		c.mu.Unlock()
		// sleep: a run lasts d on the bubble's clock, so the runs the scheduler lets in
		// overlap exactly (the tests run in synctest).
		time.Sleep(d)
		c.mu.Lock()
		c.running--
		c.mu.Unlock()
	}
}

// TestScheduleBuildsAlone: rows whose images exist run n at once; a row whose images are
// missing waits until no row runs, has them built alone, then runs beside the next rows.
func TestScheduleBuildsAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stores := []string{"etcd", "etcd", "etcd", "zookeeper", "zookeeper", "etcd", "redis", "redis"}
		var cases []Case
		for i, s := range stores {
			cases = append(cases, Case{Name: fmt.Sprintf("%d-%s", i, s), Config: harness.Config{Store: s}})
		}
		cnt := &counter{mu: &sync.Mutex{}}
		gate := &fakeGate{mu: cnt.mu, running: &cnt.running, built: map[string]bool{"etcd": true}}
		skip := func(i int, c Case, err error) { t.Errorf("case %s skipped: %v", c.Name, err) }
		schedule(context.Background(), cases, 3, gate, cnt.run(20*time.Millisecond), skip, func(string, ...any) {})
		if len(cnt.order) != len(cases) {
			t.Fatalf("ran %d of %d cases: %v", len(cnt.order), len(cases), cnt.order)
		}
		want := []string{"build zookeeper beside 0 runs", "build redis beside 0 runs"}
		if !slices.Equal(gate.seen, want) {
			t.Errorf("builds: got %q, want %q (a build must see no run beside it, once per missing store)", gate.seen, want)
		}
		if cnt.peak != 3 {
			t.Errorf("peak concurrency %d, want 3 (n)", cnt.peak)
		}
	})
}

// TestScheduleOneAtATime: with n = 1 and no gate, runs never overlap and keep their order.
func TestScheduleOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cases []Case
		for i := range 5 {
			cases = append(cases, Case{Name: fmt.Sprint(i)})
		}
		cnt := &counter{mu: &sync.Mutex{}}
		schedule(context.Background(), cases, 1, nil, cnt.run(2*time.Millisecond),
			func(int, Case, error) { t.Error("skipped") }, func(string, ...any) {})
		if cnt.peak != 1 || !slices.Equal(cnt.order, []string{"0", "1", "2", "3", "4"}) {
			t.Errorf("peak %d, order %v: want 1 and in case order", cnt.peak, cnt.order)
		}
	})
}

// TestScheduleInterrupted: cases not started when the context ends are skipped with its cause.
func TestScheduleInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	var cases []Case
	for i := range 4 {
		cases = append(cases, Case{Name: fmt.Sprint(i)})
	}
	var skipped []string
	schedule(ctx, cases, 1, nil, func(i int, c Case) {
		if i == 1 {
			cancel(fmt.Errorf("SIGINT"))
		}
	}, func(i int, c Case, err error) {
		if err == nil || err.Error() != "SIGINT" {
			t.Errorf("case %s skipped with %v, want the cause SIGINT", c.Name, err)
		}
		skipped = append(skipped, c.Name)
	}, func(string, ...any) {})
	if !slices.Equal(skipped, []string{"2", "3"}) {
		t.Errorf("skipped %v, want [2 3]", skipped)
	}
}
