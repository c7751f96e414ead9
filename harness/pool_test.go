package harness

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

func TestPoolKey(t *testing.T) {
	ft := faketimeSetup{env: map[string]string{"LD_PRELOAD": "x", "FAKETIME_NO_CACHE": "1"},
		files: []platform.File{{Path: "/splitbrain/faketime", Content: []byte("+0\n"), Mode: 0o644}}}
	base := poolKey(storekinds.Etcd, 0, "local", "img:1", faketimeSetup{})
	if got := poolKey(storekinds.Etcd, 3, "local", "img:1", faketimeSetup{}); got != base {
		t.Errorf("0 nodes must mean the default 3: %q vs %q", got, base)
	}
	differ := map[string]string{
		"nodes":    poolKey(storekinds.Etcd, 5, "local", "img:1", faketimeSetup{}),
		"kind":     poolKey(storekinds.ZooKeeper, 3, "local", "img:1", faketimeSetup{}),
		"profile":  poolKey(storekinds.Etcd, 3, "official", "img:1", faketimeSetup{}),
		"image":    poolKey(storekinds.Etcd, 3, "local", "img:2", faketimeSetup{}),
		"faketime": poolKey(storekinds.Etcd, 3, "local", "img:1", ft),
	}
	for what, k := range differ {
		if k == base {
			t.Errorf("a different %s gives the same key %q", what, k)
		}
	}
	ft2 := faketimeSetup{env: map[string]string{"FAKETIME_NO_CACHE": "1", "LD_PRELOAD": "x"}, files: ft.files}
	if poolKey(storekinds.Etcd, 3, "local", "img:1", ft) != poolKey(storekinds.Etcd, 3, "local", "img:1", ft2) {
		t.Error("the key depends on map order")
	}
	ft3 := faketimeSetup{env: ft.env, files: []platform.File{{Path: "/splitbrain/faketime", Content: []byte("+5\n"), Mode: 0o644}}}
	if poolKey(storekinds.Etcd, 3, "local", "img:1", ft) == poolKey(storekinds.Etcd, 3, "local", "img:1", ft3) {
		t.Error("different faketime file contents give the same key")
	}
}

// testPool is a pool whose removals are recorded instead of talking to Docker.
func testPool(t *testing.T) (*StorePool, func() []string) {
	p := NewStorePool()
	var mu sync.Mutex
	var removed []string
	p.destroy = func(_ context.Context, e *poolEntry) error {
		mu.Lock()
		defer mu.Unlock()
		removed = append(removed, e.id)
		return nil
	}
	return p, func() []string {
		p.bg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), removed...)
	}
}

func leased(p *StorePool, key, id string) *poolEntry {
	e := &poolEntry{key: key, id: id, uses: 1}
	p.mu.Lock()
	p.leased[e] = true
	p.mu.Unlock()
	return e
}

func TestPoolLeaseIsExclusiveAndKeyed(t *testing.T) {
	p, removed := testPool(t)
	p.MaxIdle = 4 // the miss below must not evict
	e := leased(p, "redis", "a")
	if p.take("redis") != nil {
		t.Fatal("a leased entry was handed out again")
	}
	p.giveBack(e, "run-1")
	if p.take("etcd") != nil {
		t.Fatal("an entry of another key was handed out")
	}
	var wg sync.WaitGroup
	got := make(chan *poolEntry, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if e := p.take("redis"); e != nil {
				got <- e
			}
		}()
	}
	wg.Wait()
	close(got)
	var n int
	for g := range got {
		n++
		if g != e || g.uses != 2 || g.lastRun != "run-1" {
			t.Errorf("got entry %+v, want a, 2nd use after run-1", g)
		}
	}
	if n != 1 {
		t.Fatalf("%d concurrent runs leased the same entry, want exactly 1", n)
	}
	if st := p.Stats(); st.Reused != 1 {
		t.Errorf("stats %+v, want 1 reuse", st)
	}
	if err := p.discard(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if r := removed(); len(r) != 1 || r[0] != "a" {
		t.Errorf("removed %v, want [a]", r)
	}
	if p.take("redis") != nil {
		t.Error("a discarded entry came back")
	}
	if st := p.Stats(); st.Discarded != 1 {
		t.Errorf("stats %+v, want 1 discarded", st)
	}
}

func TestPoolEvictsLeastRecentlyUsed(t *testing.T) {
	p, removed := testPool(t)
	p.MaxIdle = 2
	for _, id := range []string{"a", "b", "c"} {
		p.giveBack(leased(p, id, id), "r")
	}
	if r := removed(); len(r) != 1 || r[0] != "a" {
		t.Fatalf("removed %v, want the oldest idle entry [a]", r)
	}
	if p.take("b") == nil || p.take("c") == nil {
		t.Error("the newer entries were not kept")
	}
	// A miss makes room for the fresh cluster the caller will start.
	p.giveBack(leased(p, "d", "d"), "r")
	p.giveBack(leased(p, "e", "e"), "r")
	if p.take("f") != nil {
		t.Fatal("a miss returned an entry")
	}
	if r := removed(); !slices.Equal(r[1:], []string{"d"}) {
		t.Errorf("after a miss removed %v, want a then d (keep MaxIdle-1 = 1 idle)", r)
	}
}

func TestPoolCloseRemovesIdleAndLateReturns(t *testing.T) {
	p, removed := testPool(t)
	p.giveBack(leased(p, "k", "idle"), "r")
	late := leased(p, "k", "late")
	err := p.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "still leased") {
		t.Errorf("Close with a leased entry: %v, want a 'still leased' error", err)
	}
	if r := removed(); len(r) != 1 || r[0] != "idle" {
		t.Fatalf("removed %v, want [idle]", r)
	}
	p.giveBack(late, "r2")
	if r := removed(); len(r) != 2 || r[1] != "late" {
		t.Fatalf("an entry given back to a closed pool was kept: removed %v", r)
	}
	if p.take("k") != nil {
		t.Error("a closed pool handed out an entry")
	}
	if _, err := p.newEntry(context.Background(), "k"); err == nil {
		t.Error("a closed pool created an entry")
	}
}

func TestRunBarsReuse(t *testing.T) {
	cases := []struct {
		started   bool
		reason    string
		heal      error
		cancelled error
		want      string
	}{
		{true, "", nil, nil, ""},
		{false, "", nil, nil, "never started"},
		{true, "panic: boom", nil, nil, "ended early"},
		{true, "", errors.New("iptables rules still listed"), nil, "heal failed"},
		{true, "", nil, context.Canceled, "cancelled"},
	}
	for _, c := range cases {
		got := runBarsReuse(c.started, c.reason, c.heal, c.cancelled)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("runBarsReuse(%v, %q, %v, %v) = %q, want %q", c.started, c.reason, c.heal, c.cancelled, got, c.want)
		}
	}
}

func TestCopyFromOffset(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "pool.log")
	os.WriteFile(src, []byte("run 1 line\nrun 2 line\n"), 0o644)
	dst := filepath.Join(dir, "run.log")
	if err := copyFrom(src, int64(len("run 1 line\n")), dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "run 2 line\n" {
		t.Errorf("run log %q, want only the second run's line", b)
	}
}

func TestStoppedProcesses(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if got, err := stoppedProcesses(os.Getpid()); err != nil || len(got) != 0 {
		t.Fatalf("before SIGSTOP: stopped %v (%v), want none", got, err)
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	defer cmd.Process.Signal(syscall.SIGCONT)
	deadline := time.Now().Add(time.Minute) // a signal is delivered when the child next runs
	for {
		got, err := stoppedProcesses(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 && got[0] == cmd.Process.Pid {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stopped %v, want [%d] (the SIGSTOPped child)", got, cmd.Process.Pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 21: "21st", 112: "112th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPoolRetireRemovesOnlyThatStoresIdleClusters(t *testing.T) {
	p, removed := testPool(t)
	p.MaxIdle = 8
	zk := poolKey(storekinds.ZooKeeper, 0, "local", "zk:1", faketimeSetup{})
	zkFaketime := poolKey(storekinds.ZooKeeper, 3, "local", "zk:1", faketimeSetup{env: map[string]string{"LD_PRELOAD": "x"}})
	zk5 := poolKey(storekinds.ZooKeeper, 5, "local", "zk:1", faketimeSetup{})
	etcd := poolKey(storekinds.Etcd, 3, "local", "etcd:1", faketimeSetup{})
	for _, e := range []*poolEntry{leased(p, zk, "zk-a"), leased(p, zkFaketime, "zk-ft"), leased(p, zk5, "zk5"), leased(p, etcd, "etcd-a")} {
		p.giveBack(e, "run")
	}
	running := leased(p, zk, "zk-running") // a row of that store still runs: its cluster stays leased

	if n := p.Retire(string(storekinds.ZooKeeper), 0); n != 2 {
		t.Errorf("Retire(zookeeper, default size) = %d, want 2 (both idle 3-node clusters, with and without faketime)", n)
	}
	got := removed()
	slices.Sort(got)
	if !slices.Equal(got, []string{"zk-a", "zk-ft"}) {
		t.Errorf("removed %v, want [zk-a zk-ft]: another size and another store keep their clusters", got)
	}
	if e := p.take(etcd); e == nil || e.id != "etcd-a" {
		t.Errorf("the etcd cluster is not idle any more: %v", e)
	}
	if e := p.take(zk5); e == nil || e.id != "zk5" {
		t.Errorf("the 5-node ZooKeeper cluster is not idle any more: %v", e)
	}
	// The running row's cluster comes back after the retirement: it stays idle until told.
	p.giveBack(running, "run2")
	if got := removed(); len(got) != 2 {
		t.Errorf("a cluster given back after Retire was removed: %v", got)
	}
	if n := p.Retire(string(storekinds.ZooKeeper), 3); n != 1 || p.Stats().Retired != 3 {
		t.Errorf("second Retire = %d (want 1), Retired = %d (want 3)", n, p.Stats().Retired)
	}
	var nilPool *StorePool
	if n := nilPool.Retire("etcd", 0); n != 0 {
		t.Errorf("a nil pool retired %d", n)
	}
}
