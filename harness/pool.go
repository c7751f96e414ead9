package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// DefaultPoolMaxIdle bounds the idle clusters a pool keeps: idle servers still cost CPU
// (heartbeats, JVM), which would disturb the timing of the runs that do work. One is enough
// for a matrix run one row at a time (rows are grouped by store); RunCases sets --parallel.
const DefaultPoolMaxIdle = 1

// StorePool keeps store clusters (each with its own Docker network) between runs of a
// suite, so a run of the same store kind, size, images and faketime setup starts on a
// reset cluster instead of a fresh one. A cluster goes back to the pool only when its run
// healed, had no harness error, and the cluster proved healthy and wiped; otherwise it is
// removed and the next run gets a fresh one. Each entry is leased to one run at a time.
// Close removes everything; pooled containers carry the project labels (with the entry's
// own run id), so `splitbrain clean` sweeps them too.
type StorePool struct {
	MaxIdle int // idle clusters kept; 0 = DefaultPoolMaxIdle, < 0 = none (set before use)
	// Started, when set, is called with a new cluster's id before its network is made (set
	// before use): its containers carry that id, not the ids of the runs that lease it.
	Started func(id string)

	mu      sync.Mutex
	eng     *platform.Engine
	idle    []*poolEntry // least recently used first
	leased  map[*poolEntry]bool
	closed  bool
	bg      sync.WaitGroup // background removals of evicted entries
	images  map[images.Profile]images.Set
	imgMu   sync.Mutex
	stats   PoolStats
	destroy func(context.Context, *poolEntry) error // removeEntry; tests replace it
}

// PoolStats counts what a pool did.
type PoolStats struct {
	Launched  int // clusters started
	Reused    int // runs that got an idle cluster
	Discarded int // clusters removed because a run or a check failed
	Retired   int // idle clusters removed because no row left needed them (Retire)
}

// NewStorePool returns an empty pool; call Close when done.
func NewStorePool() *StorePool {
	p := &StorePool{leased: map[*poolEntry]bool{}, images: map[images.Profile]images.Set{}}
	p.destroy = p.removeEntry
	return p
}

// Stats returns the counters so far.
func (p *StorePool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// poolEntry is one pooled cluster on its own network.
type poolEntry struct {
	key      string
	id       string // the run id its containers and network are labelled with
	net      *platform.Network
	cluster  stores.Cluster
	logDir   string // node logs accumulate here; each run copies its share
	uses     int    // runs that used it, the current one included
	lastRun  string // run id of the previous user
	faketime bool   // nodes run under libfaketime: reset the offset file on return
}

// poolKey identifies interchangeable clusters. Clusters started under libfaketime are only
// handed to runs with the same faketime setup.
func poolKey(kind stores.Kind, nodes int, profile images.Profile, image string, ft faketimeSetup) string {
	if nodes == 0 {
		nodes = stores.DefaultNodes(kind)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%d/%s/%s", kind, nodes, profile, image)
	for _, k := range slices.Sorted(maps.Keys(ft.env)) {
		fmt.Fprintf(&b, "|env %s=%s", k, ft.env[k])
	}
	files := append([]platform.File(nil), ft.files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for _, f := range files {
		fmt.Fprintf(&b, "|file %s %o %q", f.Path, f.Mode, f.Content)
	}
	return b.String()
}

// IDs are the run ids of the pool's clusters, leased and idle, sorted: their containers and
// networks carry these, not the ids of the runs that used them.
func (p *StorePool) IDs() []string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for _, e := range p.idle {
		ids = append(ids, e.id)
	}
	for e := range p.leased {
		ids = append(ids, e.id)
	}
	slices.Sort(ids)
	return ids
}

// take leases an idle entry of key (nil when there is none or the pool is closed).
func (p *StorePool) take(key string) *poolEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	for i := len(p.idle) - 1; i >= 0; i-- {
		if e := p.idle[i]; e.key == key {
			p.idle = slices.Delete(p.idle, i, i+1)
			p.leased[e] = true
			e.uses++
			p.stats.Reused++
			return e
		}
	}
	// A miss: the caller starts a fresh cluster, which comes back to the idle list later.
	// Make room now, so idle clusters of other stores do not run next to the new one.
	p.evictLocked(p.maxIdle() - 1)
	return nil
}

func (p *StorePool) maxIdle() int {
	if p.MaxIdle == 0 {
		return DefaultPoolMaxIdle
	}
	return max(p.MaxIdle, 0)
}

// evictLocked removes the least recently used idle entries beyond keep, in the background.
func (p *StorePool) evictLocked(keep int) {
	for len(p.idle) > max(keep, 0) {
		old := p.idle[0]
		p.idle = p.idle[1:]
		p.bg.Add(1)
		go func() {
			defer p.bg.Done()
			p.destroy(context.Background(), old)
		}()
	}
}

// Retire removes the idle clusters of a store kind and size (any images or faketime setup)
// in the background and returns how many: a suite calls it when the store's last row has
// ended, so idle servers (JVM heartbeats, an API server's controllers) stop taking CPU from
// the rows still running. A cluster of that kind given back later stays idle as usual.
func (p *StorePool) Retire(store string, nodes int) int {
	if p == nil {
		return 0
	}
	if nodes == 0 {
		nodes = stores.DefaultNodes(stores.Kind(store))
	}
	prefix := fmt.Sprintf("%s/%d/", store, nodes)
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for i := 0; i < len(p.idle); {
		e := p.idle[i]
		if !strings.HasPrefix(e.key, prefix) {
			i++
			continue
		}
		p.idle = slices.Delete(p.idle, i, i+1)
		p.stats.Retired++
		n++
		p.bg.Add(1)
		go func() {
			defer p.bg.Done()
			p.destroy(context.Background(), e)
		}()
	}
	return n
}

// engine connects once; pooled nodes outlive every run's own engine connection.
func (p *StorePool) engine(ctx context.Context) (*platform.Engine, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("store pool is closed")
	}
	if p.eng == nil {
		eng, err := platform.Connect(ctx)
		if err != nil {
			return nil, err
		}
		p.eng = eng
	}
	return p.eng, nil
}

// newEntry creates a leased entry with its network; launch starts the cluster in it.
func (p *StorePool) newEntry(ctx context.Context, key string) (*poolEntry, error) {
	eng, err := p.engine(ctx)
	if err != nil {
		return nil, err
	}
	e := &poolEntry{key: key, id: platform.NewRunID(), uses: 1}
	if p.Started != nil {
		p.Started(e.id)
	}
	if e.logDir, err = os.MkdirTemp("", "splitbrain-pool-"+e.id+"-"); err != nil {
		return nil, err
	}
	if e.net, err = eng.NewNetwork(ctx, e.id); err != nil {
		os.RemoveAll(e.logDir)
		return nil, err
	}
	p.mu.Lock()
	p.leased[e] = true
	p.mu.Unlock()
	return e, nil
}

// launch starts the entry's cluster.
func (p *StorePool) launch(ctx context.Context, e *poolEntry, opts stores.Options) error {
	opts.LogDir = e.logDir
	e.faketime = len(opts.ExtraFiles) > 0
	c, err := stores.Launch(ctx, p.eng, e.net, e.id, opts)
	if err != nil {
		return err // the run discards the entry at teardown, once its other containers are gone
	}
	e.cluster = c
	p.mu.Lock()
	p.stats.Launched++
	p.mu.Unlock()
	return nil
}

// giveBack returns a checked, wiped entry to the idle list (or removes it when the pool is
// closed), evicting the least recently used idle entries beyond MaxIdle in the background.
func (p *StorePool) giveBack(e *poolEntry, runID string) {
	p.mu.Lock()
	delete(p.leased, e)
	e.lastRun = runID
	if p.closed {
		p.mu.Unlock()
		p.destroy(context.Background(), e)
		return
	}
	p.idle = append(p.idle, e)
	p.evictLocked(p.maxIdle())
	p.mu.Unlock()
}

// discard removes a leased entry for good.
func (p *StorePool) discard(ctx context.Context, e *poolEntry) error {
	p.mu.Lock()
	delete(p.leased, e)
	p.stats.Discarded++
	p.mu.Unlock()
	return p.destroy(ctx, e)
}

// removeEntry removes the cluster, its network and anything else labelled with its id.
func (p *StorePool) removeEntry(ctx context.Context, e *poolEntry) error {
	var errs []error
	if e.cluster != nil {
		errs = append(errs, e.cluster.Close(ctx))
	}
	if e.net != nil {
		errs = append(errs, e.net.Remove(ctx))
	}
	if p.eng != nil {
		if _, err := p.eng.Sweep(ctx, platform.SweepFilter{RunID: e.id}); err != nil {
			errs = append(errs, err)
		}
	}
	os.RemoveAll(e.logDir)
	return errors.Join(errs...)
}

// Close removes every idle cluster and waits for background removals. Entries still leased
// are removed when their runs give them back. Safe to call more than once.
func (p *StorePool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	leased := len(p.leased)
	p.mu.Unlock()
	errs := []error{platform.Each(len(idle), 0, func(i int) error { return p.destroy(ctx, idle[i]) })}
	p.bg.Wait()
	if leased > 0 {
		errs = append(errs, fmt.Errorf("store pool closed with %d cluster(s) still leased: they are removed when their runs end", leased))
	}
	p.mu.Lock()
	if p.eng != nil && leased == 0 {
		p.eng.Close()
		p.eng = nil
	}
	p.mu.Unlock()
	return errors.Join(errs...)
}

// ensureImages makes the roles' images present once per pool and profile; later runs get
// the cached references without asking the engine again.
func (p *StorePool) ensureImages(ctx context.Context, profile images.Profile, log io.Writer, roles ...images.Role) (images.Set, bool, error) {
	return p.ensureImagesWith(ctx, profile, images.EnsureOptions{Log: log}, roles...)
}

func (p *StorePool) ensureImagesWith(ctx context.Context, profile images.Profile, opts images.EnsureOptions, roles ...images.Role) (images.Set, bool, error) {
	p.imgMu.Lock()
	have := p.images[profile]
	var missing []images.Role
	for _, r := range roles {
		if have[r] == "" {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		defer p.imgMu.Unlock()
		return maps.Clone(have), true, nil
	}
	p.imgMu.Unlock()
	// No lock is held while images build: a background build of one store's image must not
	// hold up a run that needs others. The images package's lock per tag keeps two builders
	// of one image from building it twice.
	set, _, err := images.EnsureWith(ctx, profile, opts, missing...)
	if err != nil {
		return nil, false, err
	}
	p.imgMu.Lock()
	defer p.imgMu.Unlock()
	if p.images[profile] == nil {
		p.images[profile] = images.Set{}
	}
	maps.Copy(p.images[profile], set)
	return maps.Clone(p.images[profile]), false, nil
}

// storeLease is a run's hold on a pooled cluster.
type storeLease struct {
	pool    *StorePool
	entry   *poolEntry
	reused  bool
	offsets map[string]int64 // node name → its pool log size when the run got the cluster
	note    string           // what config.json and the run log say about the store
}

// logOffsets records where each node's pool log ends now.
func logOffsets(c stores.Cluster) map[string]int64 {
	out := map[string]int64{}
	for _, n := range c.Nodes() {
		if fi, err := os.Stat(n.LogPath()); err == nil {
			out[n.Name()] = fi.Size()
		}
	}
	return out
}

// copyRunLogs writes each node's log lines since the run got the cluster into dir/<node>.log.
func (l *storeLease) copyRunLogs(dir string) error {
	if l.entry.cluster == nil {
		return nil
	}
	var errs []error
	for _, n := range l.entry.cluster.Nodes() {
		src := n.LogPath()
		if src == "" {
			continue
		}
		errs = append(errs, copyFrom(src, l.offsets[n.Name()], filepath.Join(dir, n.Name()+".log")))
	}
	return errors.Join(errs...)
}

func copyFrom(src string, offset int64, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := in.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// stoppedProcesses lists processes in the tree of host PID root that are stopped (SIGSTOP
// or traced): Docker reports such a container as running.
func stoppedProcesses(root int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	parent := map[int]int{}
	state := map[int]byte{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if i < 0 || len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid], state[pid] = ppid, f[0][0]
	}
	var out []int
	for pid := range state {
		for q := pid; q > 1; q = parent[q] {
			if q == root {
				if st := state[pid]; st == 'T' || st == 't' {
					out = append(out, pid)
				}
				break
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// ordinal spells n as "1st", "2nd", … for the run log.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
