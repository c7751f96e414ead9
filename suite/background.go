package suite

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// buildMinutes is how long each store server's image took to build from nothing on the
// project's machine kind (docs/performance.md "First verdict": consul 10 min 8 s,
// kubernetes 9 min 25 s, etcd's share of the first 5 min 28 s, zookeeper 53 s, postgres
// 57 s). It orders the short lane, breaks ties in the long one, and estimates when each image
// is there, which orders the rows waiting for them; a role missing here counts as a minute.
var buildMinutes = map[images.Role]float64{
	storekinds.Consul: 10.1, storekinds.Kubernetes: 9.4, storekinds.Etcd: 3,
	storekinds.DynamoDB: 1.5, storekinds.Postgres: 1, storekinds.ZooKeeper: 0.9, storekinds.Redis: 0.7,
}

// longBuild: an image at least this long to build (a Go server built from source) goes to
// the lane of long builds; the others (Debian packages, npm) go to the other lane shortest
// first, so rows start soon. The long builds start in the order of the row time waiting for
// each (longRowsFirst), so the build that ends last is the one with the fewest rows after it.
const longBuild = 3.0

// backgroundBuilds builds the store servers' images the rows need, in two lanes at the
// lowest CPU weight, while rows whose images exist run.
type backgroundBuilds struct {
	done  map[images.Role]chan struct{} // closed when the role's build has ended
	ready map[images.Role]float64       // estimated minutes from the start until it is built
	wg    sync.WaitGroup
	mu    sync.Mutex
	errs  map[images.Role]error
	// changed is closed, and replaced, whenever a build ends (schedule waits on it).
	changed chan struct{}
}

// startBackgroundBuilds starts the builds of every store server's image a case needs and
// lacks. Roles that are not a store server's (base, tools, candidate) must exist already:
// every store image is built on the base.
func startBackgroundBuilds(ctx context.Context, cases []Case, gate imageGate, say func(string, ...any)) *backgroundBuilds {
	server := map[images.Role]bool{}
	for _, d := range storekinds.All() {
		for _, r := range d.Roles() {
			server[images.Role(r)] = true
		}
	}
	firstNeed := map[images.Role]Case{}
	rowTime := map[images.Role]time.Duration{} // the planned time of the rows waiting for each
	for _, c := range cases {
		for _, r := range gate.unbuilt(c) {
			if !server[r] {
				continue
			}
			if _, ok := firstNeed[r]; !ok {
				firstNeed[r] = c
			}
			rowTime[r] += c.Planned()
		}
	}
	b := &backgroundBuilds{done: map[images.Role]chan struct{}{}, ready: map[images.Role]float64{}, errs: map[images.Role]error{},
		changed: make(chan struct{})}
	var long, short []images.Role
	for r := range firstNeed {
		b.done[r] = make(chan struct{})
		if minutes(r) >= longBuild {
			long = append(long, r)
		} else {
			short = append(short, r)
		}
	}
	longRowsFirst(long, rowTime)
	sort.Slice(short, func(i, j int) bool {
		if minutes(short[i]) != minutes(short[j]) {
			return minutes(short[i]) < minutes(short[j])
		}
		return short[i] < short[j]
	})
	var lanes []string
	for _, lane := range [][]images.Role{long, short} {
		if len(lane) > 0 {
			lanes = append(lanes, laneNames(lane))
		}
	}
	if len(lanes) > 0 {
		say("matrix: building store images in the background at the lowest CPU weight (%s; a lane that runs out takes the other's next build); rows whose images exist run meanwhile\n", strings.Join(lanes, " | "))
	}
	q := &buildQueue{long: long, short: short}
	b.ready = q.estimate()
	for lane := range 2 {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for {
				r, ok := q.next(lane == 0)
				if !ok {
					return
				}
				var err error
				if ctx.Err() == nil {
					start := time.Now()
					err = gate.build(ctx, firstNeed[r], []images.Role{r}, true)
					if err != nil {
						say("matrix: background build of %s failed after %v (its rows run and report it): %v\n", r, time.Since(start).Round(time.Second), err)
					} else {
						say("matrix: %s image built in the background in %v\n", r, time.Since(start).Round(time.Second))
					}
				} else {
					err = context.Cause(ctx)
				}
				b.mu.Lock()
				b.errs[r] = err
				close(b.done[r])
				close(b.changed)
				b.changed = make(chan struct{})
				b.mu.Unlock()
			}
		}()
	}
	return b
}

// longRowsFirst orders the long builds by the planned time of the rows waiting for each,
// most first (ties: the longer build first). Every build runs beside rows until the rows that
// can run have run, and from then on the machine has nothing to do but the builds left and
// the rows each releases; so the build that ends last should release the fewest rows. Built
// longest first, Kubernetes ended last on a bare machine and its 16 rows ran alone for
// 3 minutes at two thirds of the cores, while Consul's 3 rows would have taken half a minute.
// Started 6 minutes earlier this way it still ended last there, its build being the most
// work, and the tier took 27 s less (docs/performance.md).
func longRowsFirst(long []images.Role, rowTime map[images.Role]time.Duration) {
	sort.Slice(long, func(i, j int) bool {
		a, b := long[i], long[j]
		switch {
		case rowTime[a] != rowTime[b]:
			return rowTime[a] > rowTime[b]
		case minutes(a) != minutes(b):
			return minutes(a) > minutes(b)
		}
		return a < b
	})
}

// buildQueue hands the two lanes their builds: the long lane the long builds in
// longRowsFirst's order, the short lane the others shortest first. A lane whose own list is
// done takes from the other's: the short lane the next long build, the long lane the longest
// short one. With two fixed lists the short lane sat idle for 8 minutes of a bare machine's
// default tier while etcd's build, whose rows are the tier's most, waited behind
// Kubernetes's in the long lane (2026-11-29, /work/runs/cold3).
type buildQueue struct {
	mu          sync.Mutex
	long, short []images.Role
}

// next is the next build for the long lane (longLane) or the short one; false when none is left.
func (q *buildQueue) next(longLane bool) (images.Role, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pop(longLane)
}

func (q *buildQueue) pop(longLane bool) (images.Role, bool) {
	own, other := &q.long, &q.short
	if !longLane {
		own, other = &q.short, &q.long
	}
	switch {
	case len(*own) > 0:
		r := (*own)[0]
		*own = (*own)[1:]
		return r, true
	case !longLane && len(*other) > 0: // the next long build
		r := (*other)[0]
		*other = (*other)[1:]
		return r, true
	case len(*other) > 0: // the longest short build
		r := (*other)[len(*other)-1]
		*other = (*other)[:len(*other)-1]
		return r, true
	}
	return "", false
}

// estimate plays the queue out on the expected build times (minutes), the lane that is free
// first taking the next build, and says when each image is expected.
func (q *buildQueue) estimate() map[images.Role]float64 {
	sim := buildQueue{long: slices.Clone(q.long), short: slices.Clone(q.short)}
	ready := map[images.Role]float64{}
	var clock [2]float64
	for {
		lane := 0
		if clock[1] < clock[0] {
			lane = 1
		}
		r, ok := sim.pop(lane == 0)
		if !ok {
			return ready
		}
		clock[lane] += minutes(r)
		ready[r] = clock[lane]
	}
}

func minutes(r images.Role) float64 {
	if m, ok := buildMinutes[r]; ok {
		return m
	}
	return 1
}

// readyAt is when c's images are expected to exist: 0 when they do.
func (b *backgroundBuilds) readyAt(c Case, gate imageGate) float64 {
	t := 0.0
	for _, r := range gate.unbuilt(c) {
		t = max(t, b.ready[r])
	}
	return t
}

// order puts the cases whose images exist first, then by when their images are expected,
// keeping order (poolOrder's grouping by store cluster) among equals.
func (b *backgroundBuilds) order(cases []Case, order []int, gate imageGate) []int {
	at := make(map[int]float64, len(order))
	for _, i := range order {
		at[i] = b.readyAt(cases[i], gate)
	}
	out := slices.Clone(order)
	sort.SliceStable(out, func(x, y int) bool { return at[out[x]] < at[out[y]] })
	return out
}

// changes is closed when the next build ends.
func (b *backgroundBuilds) changes() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// settled says every background build c needs has ended (built or failed).
func (b *backgroundBuilds) settled(c Case, gate imageGate) bool {
	for _, r := range gate.unbuilt(c) {
		ch, ok := b.done[r]
		if !ok {
			continue // no background build: schedule builds it alone
		}
		select {
		case <-ch:
		default:
			return false
		}
	}
	return true
}

// failed lists the background builds c needs that ended in an error (c settled).
func (b *backgroundBuilds) failed(c Case, gate imageGate) []images.Role {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []images.Role
	for _, r := range gate.unbuilt(c) {
		if _, ok := b.done[r]; ok && b.errs[r] != nil {
			out = append(out, r)
		}
	}
	return out
}

// wait returns once every background build has ended (they end early when ctx ends).
func (b *backgroundBuilds) wait() { b.wg.Wait() }

// laneNames lists a lane's roles in build order.
func laneNames(lane []images.Role) string {
	names := make([]string, len(lane))
	for i, r := range lane {
		names[i] = string(r)
	}
	return strings.Join(names, ", then ")
}
