package candidates

import (
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
)

func TestRegistryCoversEveryStoreAndChecksFit(t *testing.T) {
	if err := Registry.Check(); err != nil {
		t.Fatal(err)
	}
	stores := map[string]int{}
	for _, d := range Registry {
		s := d.Describe()
		stores[s.Store]++
		if _, err := Registry.LookupFor(s.Name, s.Store); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		tm := d.TimingFor(contract.Config{LeaseTTL: 2 * time.Second})
		if tm.TTL <= 0 || tm.HandoffBound <= 0 || tm.FailoverBound < tm.HandoffBound {
			t.Errorf("%s: implausible timing %+v", s.Name, tm)
		}
	}
	for _, st := range contract.Stores {
		if stores[st] == 0 {
			t.Errorf("no recipe for store %s", st)
		}
	}
	if _, err := Registry.LookupFor("etcd-election", "redis"); err == nil || !strings.Contains(err.Error(), "recipes for redis: naive-lease, redis-incr-after-setnx, redis-py-lock") {
		t.Fatalf("mismatch error %v does not list the fitting recipes", err)
	}
	if _, err := Registry.LookupFor("redlock", "redis"); err == nil || !strings.Contains(err.Error(), `runs on store "redis-multi", not "redis"`) {
		t.Fatalf("redlock on a single Redis: error %v does not name redis-multi", err)
	}
	if _, err := Registry.Lookup("zk"); err == nil || !strings.Contains(err.Error(), "zookeeper-seq") {
		t.Fatalf("unknown recipe error %v does not list the known ones", err)
	}
}

func TestTTLRounding(t *testing.T) {
	if got := etcdTTL(1500 * time.Millisecond); got != 2*time.Second {
		t.Errorf("etcdTTL(1.5s) = %v, want 2s (etcd leases are whole seconds)", got)
	}
	for _, c := range []struct{ in, want time.Duration }{{500 * time.Millisecond, 3 * time.Second}, {2 * time.Second, 3 * time.Second}, {3500 * time.Millisecond, 4 * time.Second}} {
		if got := pgTTL(c.in); got != c.want {
			t.Errorf("pgTTL(%v) = %v, want %v (keepalive: idle + two probes, whole seconds)", c.in, got, c.want)
		}
	}
	if got := zkSeq("_c_abc-n-0000000012"); got != "0000000012" {
		t.Errorf("zkSeq = %q", got)
	}
}
