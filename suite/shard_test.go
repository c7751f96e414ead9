package suite

import (
	"slices"
	"testing"
	"time"
)

func TestParseShard(t *testing.T) {
	for _, ok := range []string{"1/1", "2/4", " 3 / 8 "} {
		if _, err := ParseShard(ok); err != nil {
			t.Errorf("ParseShard(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1", "0/4", "5/4", "-1/2", "1/0", "a/b", "1/100000", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}

// Every row of the real matrix lands in exactly one shard for N = 1..8, shards keep matrix
// order, the split is the same on every call, and no shard exceeds an even share by more
// than the largest cluster group piece (itself at most an even share or one row).
func TestPartitionRealMatrix(t *testing.T) {
	m, err := Load("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tier := range []string{TierSmoke, TierDefault, TierNightly} {
		cases, err := m.Select(tier, "")
		if err != nil {
			t.Fatal(err)
		}
		var total, longest time.Duration
		for _, c := range cases {
			total += cost(c)
			longest = max(longest, cost(c))
		}
		for n := 1; n <= 8; n++ {
			shards := Partition(cases, n)
			if len(shards) != n {
				t.Fatalf("%s N=%d: %d shards", tier, n, len(shards))
			}
			seen := map[string]int{}
			share := total / time.Duration(n)
			for s, sh := range shards {
				var load time.Duration
				last := -1
				for _, c := range sh {
					seen[c.Name]++
					load += cost(c)
					i := slices.IndexFunc(cases, func(x Case) bool { return x.Name == c.Name })
					if i < last {
						t.Errorf("%s N=%d shard %d: %s out of matrix order", tier, n, s+1, c.Name)
					}
					last = i
				}
				if bound := share + max(share, longest); load > bound {
					t.Errorf("%s N=%d shard %d: load %v exceeds share %v + largest piece (bound %v)", tier, n, s+1, load, share, bound)
				}
			}
			for _, c := range cases {
				if seen[c.Name] != 1 {
					t.Errorf("%s N=%d: %s in %d shards", tier, n, c.Name, seen[c.Name])
				}
			}
			again := Partition(cases, n)
			for s := range shards {
				if !slices.EqualFunc(shards[s], again[s], func(a, b Case) bool { return a.Name == b.Name }) {
					t.Errorf("%s N=%d shard %d: not deterministic", tier, n, s+1)
				}
			}
		}
	}
}

// A store's rows stay on one shard when they fit in an even share.
func TestPartitionKeepsClusterGroups(t *testing.T) {
	mk := func(name, store string, d time.Duration) Case {
		return Case{Name: name, Row: Row{Store: store}, Timing: Timing{Duration: d}}
	}
	cases := []Case{
		mk("etcd/a", "etcd", 20*time.Second), mk("pg/a", "postgres", 20*time.Second),
		mk("etcd/b", "etcd", 20*time.Second), mk("pg/b", "postgres", 20*time.Second),
	}
	shards := Partition(cases, 2)
	for _, sh := range shards {
		if len(sh) != 2 || sh[0].Row.Store != sh[1].Row.Store {
			t.Fatalf("want each store's rows together, got %v", names(shards))
		}
	}
	// One big group is cut so that two shards share the work.
	var big []Case
	for _, n := range []string{"a", "b", "c", "d"} {
		big = append(big, mk("etcd/"+n, "etcd", time.Minute))
	}
	shards = Partition(big, 2)
	if len(shards[0]) != 2 || len(shards[1]) != 2 {
		t.Fatalf("want a big group cut in two, got %v", names(shards))
	}
}

func names(shards [][]Case) [][]string {
	var out [][]string
	for _, sh := range shards {
		var ns []string
		for _, c := range sh {
			ns = append(ns, c.Name)
		}
		out = append(out, ns)
	}
	return out
}
