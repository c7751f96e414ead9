package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// fakeGate has images for the roles in built; a build takes took[role] (on the synctest
// bubble's clock) and records how many runs were going on when it started.
type fakeGate struct {
	mu      *sync.Mutex // shared with the runs, which count themselves in running
	running *int
	built   map[string]bool
	took    map[string]time.Duration
	seen    []string // "build <roles> [background] beside <n> runs"
	ended   map[string]time.Time
}

// unbuilt: a case needs the shared role tools and its store's role.
func (g *fakeGate) unbuilt(c Case) []images.Role {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []images.Role
	for _, r := range []string{"tools", c.Config.Store} {
		if !g.built[r] {
			out = append(out, images.Role(r))
		}
	}
	return out
}

func (g *fakeGate) build(ctx context.Context, c Case, roles []images.Role, background bool) error {
	g.mu.Lock()
	how := ""
	if background {
		how = " background"
	}
	g.seen = append(g.seen, fmt.Sprintf("build %s%s beside %d runs", roleNames(roles), how, *g.running))
	var d time.Duration
	for _, r := range roles {
		d += g.took[string(r)]
	}
	g.mu.Unlock()
	// sleep: a build lasts d on the synctest bubble's clock, which only moves once every
	// goroutine waits, so the runs admitted beside it are running while it lasts.
	time.Sleep(d)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range roles {
		g.built[string(r)] = true
		if g.ended == nil {
			g.ended = map[string]time.Time{}
		}
		g.ended[string(r)] = time.Now()
	}
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

// TestScheduleBuildsBesideRows: the shared images are built first, alone; the store
// images in the background while the rows whose images exist run; a row needing a store
// image starts only once it is built, and the rows run in the order their images come.
func TestScheduleBuildsBesideRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stores := []string{"zookeeper", "etcd", "etcd", "redis", "etcd", "etcd", "zookeeper", "redis", "etcd", "etcd"}
		var cases []Case
		for i, s := range stores {
			cases = append(cases, Case{Name: fmt.Sprintf("%d-%s", i, s), Config: harness.Config{Store: s}})
		}
		cnt := &counter{mu: &sync.Mutex{}}
		gate := &fakeGate{mu: cnt.mu, running: &cnt.running, built: map[string]bool{"etcd": true},
			took: map[string]time.Duration{"tools": 10 * time.Millisecond, "zookeeper": 90 * time.Millisecond, "redis": 40 * time.Millisecond}}
		started := map[string]time.Time{}
		run := cnt.run(20 * time.Millisecond)
		skip := func(i int, c Case, err error) { t.Errorf("case %s skipped: %v", c.Name, err) }
		schedule(context.Background(), cases, 3, nil, gate, nil, func(i int, c Case) {
			cnt.mu.Lock()
			started[c.Name] = time.Now()
			cnt.mu.Unlock()
			run(i, c)
		}, skip, func(string, ...any) {})
		if len(cnt.order) != len(cases) {
			t.Fatalf("ran %d of %d cases: %v", len(cnt.order), len(cases), cnt.order)
		}
		if len(gate.seen) != 3 || gate.seen[0] != "build tools beside 0 runs" {
			t.Fatalf("builds %q: want tools first with no run beside it, then zookeeper and redis in the background", gate.seen)
		}
		for _, b := range gate.seen[1:] {
			if !strings.Contains(b, " background ") {
				t.Errorf("%q: a store image must build in the background", b)
			}
		}
		// The etcd rows start at once and run while the store images build.
		for _, name := range cnt.order[:6] {
			if !strings.HasSuffix(name, "-etcd") {
				t.Errorf("order %v: the six etcd rows, whose images exist, must run first", cnt.order)
				break
			}
		}
		if !started["1-etcd"].Before(gate.ended["zookeeper"]) {
			t.Errorf("the first etcd row started %v, after the zookeeper image was built (%v): rows must run beside the builds", started["1-etcd"], gate.ended["zookeeper"])
		}
		for name, at := range started {
			for _, s := range []string{"zookeeper", "redis"} {
				if strings.HasSuffix(name, "-"+s) && at.Before(gate.ended[s]) {
					t.Errorf("%s started %v before its image was built", name, gate.ended[s].Sub(at))
				}
			}
		}
		// redis's image comes before zookeeper's (the short lane, shortest first): its rows run first.
		lastRedis := max(slices.Index(cnt.order, "3-redis"), slices.Index(cnt.order, "7-redis"))
		firstZK := min(slices.Index(cnt.order, "0-zookeeper"), slices.Index(cnt.order, "6-zookeeper"))
		if lastRedis > firstZK {
			t.Errorf("order %v: the redis rows (image expected sooner) must come before the zookeeper rows", cnt.order)
		}
		// Two, not three: one slot stays with the builds while they run, and only the two
		// zookeeper rows are left when the last ends (TestScheduleLeavesASlotToBuilds).
		if cnt.peak != 2 {
			t.Errorf("peak concurrency %d, want 2 (n - 1)", cnt.peak)
		}
	})
}

// TestScheduleTakesTurnsAmongStores: several at once, at most half the slots go to one store
// cluster's rows while another store's row can start (its later rows then reuse the first
// ones' clusters), and a slot is never left idle for that: with nothing else left, the store
// takes every slot.
func TestScheduleTakesTurnsAmongStores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cases []Case
		for i, s := range []string{"etcd", "etcd", "etcd", "etcd", "etcd", "etcd", "redis"} {
			cases = append(cases, Case{Name: fmt.Sprintf("%d-%s", i, s), Config: harness.Config{Store: s}})
		}
		cnt := &counter{mu: &sync.Mutex{}}
		run := cnt.run(10 * time.Millisecond)
		start := time.Now()
		var redisAt time.Duration
		schedule(context.Background(), cases, 4, nil, nil, nil, func(i int, c Case) {
			if c.Config.Store == "redis" {
				redisAt = time.Since(start) // the bubble's clock: 0 in the first round
			}
			run(i, c)
		}, func(int, Case, error) { t.Error("skipped") }, func(string, ...any) {})
		// The first round's four start at the same instant, in no set order: in it two etcd
		// rows, the redis row (the etcd rows hold half of four), and one more etcd row.
		if redisAt != 0 {
			t.Errorf("the redis row started %v in, not with the first four (order %v): one store took more than half the slots", redisAt, cnt.order)
		}
		if cnt.peak != 4 {
			t.Errorf("peak %d, want 4: the etcd rows take the slot the redis row leaves rather than none", cnt.peak)
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
		schedule(context.Background(), cases, 1, nil, nil, nil, cnt.run(2*time.Millisecond),
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
	schedule(ctx, cases, 1, nil, nil, nil, func(i int, c Case) {
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

// TestUnlinkedRowsWaitWithoutASlot: in a core build, the rows its stores do not link take a
// slot only once the full binary is ready, so one slot (n = 1) is enough: had a waiting row
// held it, the linked rows behind it would never start. Once ready, they go first (they are
// the longest rows).
func TestUnlinkedRowsWaitWithoutASlot(t *testing.T) {
	defer func(f func(stores.Kind) bool) { storeLinked = f }(storeLinked)
	storeLinked = func(k stores.Kind) bool { return k != storekinds.Kubernetes }
	synctest.Test(t, func(t *testing.T) {
		var cases []Case
		for i, store := range []string{storekinds.Kubernetes, storekinds.Redis, storekinds.Kubernetes, storekinds.Etcd, storekinds.Redis} {
			cases = append(cases, Case{Name: fmt.Sprint(i), Config: harness.Config{Store: store}})
		}
		ready := make(chan struct{})
		var order []string
		schedule(context.Background(), cases, 1, nil, nil, ready, func(i int, c Case) {
			order = append(order, c.Name)
			if c.Name == "1" {
				close(ready) // the full binary is built while the first linked row runs
			}
		}, func(int, Case, error) { t.Error("skipped") }, func(string, ...any) {})
		// poolOrder: the Kubernetes rows 0 and 2, the Redis rows 1 and 4, the etcd row 3.
		if !slices.Equal(order, []string{"1", "0", "2", "4", "3"}) {
			t.Errorf("order %v: want the linked row 1, then the unlinked 0 and 2 once ready, then 4 and 3", order)
		}
	})
}

// TestSaltedRunCountsOnlyItsOwnImages: with SPLITBRAIN_IMAGE_SALT set every tag is new, so the
// unsalted images present must not let a row skip the shared builds (and the reverse).
func TestSaltedRunCountsOnlyItsOwnImages(t *testing.T) {
	plain := platform.Image{Refs: []string{"splitbrain.invalid/base:a"}, Role: "base", Labels: map[string]string{}}
	salted := platform.Image{Refs: []string{"splitbrain.invalid/base:b"}, Role: "base", Labels: map[string]string{images.LabelSalt: "cold-1"}}
	untagged := platform.Image{Role: "base", Labels: map[string]string{}}
	for _, c := range []struct {
		img  platform.Image
		salt string
		want bool
	}{{plain, "", true}, {plain, "cold-1", false}, {salted, "cold-1", true}, {salted, "", false}, {salted, "cold-2", false}, {untagged, "", false}} {
		if got := countsAsBuilt(c.img, c.salt); got != c.want {
			t.Errorf("image %v with salt %q: counts %v, want %v", c.img.Refs, c.salt, got, c.want)
		}
	}
}

// TestBuildLanesShareWhatIsLeft: the short lane, done with its own builds, takes the next
// long build instead of idling while it waits behind another in the long lane; the
// estimates follow the same play.
func TestBuildLanesShareWhatIsLeft(t *testing.T) {
	long := []images.Role{storekinds.Etcd, storekinds.Kubernetes, storekinds.Consul} // longRowsFirst's order
	short := []images.Role{storekinds.Redis, storekinds.ZooKeeper, storekinds.Postgres, storekinds.DynamoDB}
	q := &buildQueue{long: slices.Clone(long), short: slices.Clone(short)}
	ready := q.estimate()
	if !(ready[storekinds.Etcd] < ready[storekinds.Kubernetes] && ready[storekinds.Kubernetes] < ready[storekinds.Consul]) {
		t.Errorf("expected etcd, Kubernetes, Consul at %.1f, %.1f, %.1f min: want them in the long list's order",
			ready[storekinds.Etcd], ready[storekinds.Kubernetes], ready[storekinds.Consul])
	}
	take := func(longLane bool, want images.Role) {
		t.Helper()
		if r, ok := q.next(longLane); !ok || r != want {
			t.Errorf("lane (long %v) took %q, want %q", longLane, r, want)
		}
	}
	take(true, storekinds.Etcd)
	for _, r := range short {
		take(false, r)
	}
	take(false, storekinds.Kubernetes) // not the long list's far end
	take(true, storekinds.Consul)
	if r, ok := q.next(false); ok {
		t.Errorf("a build handed out twice: %v", r)
	}
	q = &buildQueue{short: slices.Clone(short)}
	take(true, storekinds.DynamoDB) // the long lane, with nothing of its own, takes the longest short build
}

// TestLongBuildsByTheRowsWaiting: the long build with the most row time waiting for it starts
// first, so the one that ends last releases the fewest rows (on a bare machine Kubernetes,
// built after Consul because its build is shorter, ended last and its 16 rows ran on alone
// for 3 minutes); equal row time puts the longer build first.
func TestLongBuildsByTheRowsWaiting(t *testing.T) {
	long := []images.Role{storekinds.Consul, storekinds.Kubernetes, storekinds.Etcd}
	rowTime := map[images.Role]time.Duration{storekinds.Consul: 3 * time.Minute, storekinds.Kubernetes: 16 * time.Minute,
		storekinds.Etcd: 40 * time.Minute}
	longRowsFirst(long, rowTime)
	if want := []images.Role{storekinds.Etcd, storekinds.Kubernetes, storekinds.Consul}; !slices.Equal(long, want) {
		t.Errorf("order %v, want %v", long, want)
	}
	rowTime[storekinds.Kubernetes] = rowTime[storekinds.Consul]
	longRowsFirst(long, rowTime)
	if want := []images.Role{storekinds.Etcd, storekinds.Consul, storekinds.Kubernetes}; !slices.Equal(long, want) {
		t.Errorf("equal row time: order %v, want %v (Consul's build is the longer)", long, want)
	}
}

// TestScheduleDoesNotWaitBehindOneImage: a row whose image is still building does not hold
// back the rows behind it whose images are there: the unlinked Consul row, its image and the
// full binary ready, runs while the etcd row ahead of it waits for a long etcd build (on an
// emulated bare machine the Consul and DynamoDB rows waited 15 minutes that way).
func TestScheduleDoesNotWaitBehindOneImage(t *testing.T) {
	defer func(f func(stores.Kind) bool) { storeLinked = f }(storeLinked)
	storeLinked = func(k stores.Kind) bool { return k != storekinds.Consul }
	synctest.Test(t, func(t *testing.T) {
		var cases []Case
		for i, s := range []string{storekinds.Redis, storekinds.Etcd, storekinds.Consul} {
			cases = append(cases, Case{Name: fmt.Sprintf("%d-%s", i, s), Config: harness.Config{Store: s}})
		}
		cnt := &counter{mu: &sync.Mutex{}}
		gate := &fakeGate{mu: cnt.mu, running: &cnt.running, built: map[string]bool{"tools": true, "redis": true},
			took: map[string]time.Duration{"etcd": 10 * time.Second, "consul": time.Second}}
		ready := make(chan struct{})
		started := map[string]time.Time{}
		run := cnt.run(100 * time.Millisecond)
		schedule(context.Background(), cases, 2, nil, gate, ready, func(i int, c Case) {
			cnt.mu.Lock()
			started[c.Name] = time.Now()
			cnt.mu.Unlock()
			if c.Name == "0-redis" {
				close(ready) // the full binary is built while the first row runs
			}
			run(i, c)
		}, func(i int, c Case, err error) { t.Errorf("case %s skipped: %v", c.Name, err) }, func(string, ...any) {})
		if len(cnt.order) != 3 {
			t.Fatalf("ran %v", cnt.order)
		}
		if !started["2-consul"].Before(gate.ended["etcd"]) {
			t.Errorf("the Consul row started %v after the etcd image was built: it waited behind the etcd row", started["2-consul"].Sub(gate.ended["etcd"]))
		}
		if started["1-etcd"].Before(gate.ended["etcd"]) {
			t.Error("the etcd row started before its image was built")
		}
	})
}

// buildPeaks is a run func that records the most runs at once before and after built()
// turns true (read under mu, which the build under test writes its state under).
type buildPeaks struct {
	mu                     *sync.Mutex
	built                  func() bool
	running, during, after int
}

func (p *buildPeaks) run(d time.Duration) func(int, Case) {
	return func(int, Case) {
		p.mu.Lock()
		p.running++
		if p.built() {
			p.after = max(p.after, p.running)
		} else {
			p.during = max(p.during, p.running)
		}
		p.mu.Unlock()
		// sleep: a row lasts d on the bubble's clock (the tests run in synctest).
		time.Sleep(d)
		p.mu.Lock()
		p.running--
		p.mu.Unlock()
	}
}

// TestScheduleLeavesASlotToBuilds: while a store image builds in the background one of the n
// slots stays free, and all n run rows once it is built; nothing is held back when nothing
// builds.
func TestScheduleLeavesASlotToBuilds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cases []Case
		for i := range 12 {
			cases = append(cases, Case{Name: fmt.Sprintf("%d-etcd", i), Config: harness.Config{Store: "etcd"}})
		}
		for i := range 3 {
			cases = append(cases, Case{Name: fmt.Sprintf("%d-redis", 12+i), Config: harness.Config{Store: "redis"}})
		}
		pk := &buildPeaks{mu: &sync.Mutex{}}
		gate := &fakeGate{mu: pk.mu, running: &pk.running, built: map[string]bool{"tools": true, "etcd": true},
			took: map[string]time.Duration{"redis": 100 * time.Millisecond}}
		pk.built = func() bool { _, ok := gate.ended["redis"]; return ok }
		var said []string
		// Rows of 20 ms: six rounds at two at once outlast the 100 ms build.
		schedule(context.Background(), cases, 3, nil, gate, nil, pk.run(20*time.Millisecond),
			func(int, Case, error) { t.Error("skipped") }, func(f string, a ...any) {
				pk.mu.Lock()
				said = append(said, fmt.Sprintf(f, a...))
				pk.mu.Unlock()
			})
		if pk.during != 2 {
			t.Errorf("%d rows at once while the redis image built, want 2 (3 slots, one left to the build)", pk.during)
		}
		if pk.after != 3 {
			t.Errorf("%d rows at once after the build, want 3", pk.after)
		}
		if !slices.ContainsFunc(said, func(s string) bool { return strings.Contains(s, "2 rows at once while images") }) {
			t.Errorf("progress %q does not say that a slot is left to the builds", said)
		}
	})
	// The full binary building beside the rows (unlinkedReady open) holds the slot the same way.
	synctest.Test(t, func(t *testing.T) {
		var cases []Case
		for i := range 12 {
			cases = append(cases, Case{Name: fmt.Sprint(i), Config: harness.Config{Store: "etcd"}})
		}
		pk := &buildPeaks{mu: &sync.Mutex{}}
		gate := &fakeGate{mu: pk.mu, running: &pk.running, built: map[string]bool{"tools": true, "etcd": true}}
		ready := make(chan struct{})
		var readyAt time.Time
		pk.built = func() bool { return !readyAt.IsZero() }
		go func() {
			// sleep: the full binary takes 50 ms on the bubble's clock (synctest).
			time.Sleep(50 * time.Millisecond)
			pk.mu.Lock()
			readyAt = time.Now()
			pk.mu.Unlock()
			close(ready)
		}()
		schedule(context.Background(), cases, 3, nil, gate, ready, pk.run(20*time.Millisecond),
			func(int, Case, error) { t.Error("skipped") }, func(string, ...any) {})
		if pk.during != 2 || pk.after != 3 {
			t.Errorf("%d rows at once while the full binary built and %d after, want 2 and 3", pk.during, pk.after)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		var cases []Case
		for i := range 6 {
			cases = append(cases, Case{Name: fmt.Sprint(i), Config: harness.Config{Store: "etcd"}})
		}
		cnt := &counter{mu: &sync.Mutex{}}
		gate := &fakeGate{mu: cnt.mu, running: &cnt.running, built: map[string]bool{"tools": true, "etcd": true}}
		schedule(context.Background(), cases, 3, nil, gate, nil, cnt.run(10*time.Millisecond),
			func(int, Case, error) { t.Error("skipped") }, func(string, ...any) {})
		if cnt.peak != 3 {
			t.Errorf("peak %d with every image present, want 3: nothing builds, so no slot is held", cnt.peak)
		}
	})
}
