package suite

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// Shard names one share of a matrix: I of N (1-based), as in `splitbrain matrix --shard 2/4`.
type Shard struct{ I, N int }

// maxShards bounds N: far beyond any CI fan-out, small enough that a typo like 1/100000 is
// refused instead of producing thousands of empty shards.
const maxShards = 256

// rowSetup is the per-row cost that planned phases do not show (cluster start or reset,
// candidates, teardown, checking), measured at about 10 s per row (docs/performance.md). It
// makes a shard of many short rows count as longer than one long row of the same phases.
const rowSetup = 10 * time.Second

// ParseShard reads "I/N" with 1 <= I <= N.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || err1 != nil || err2 != nil || n < 1 || n > maxShards || i < 1 || i > n {
		return Shard{}, fmt.Errorf("--shard %q: want I/N with 1 <= I <= N <= %d, e.g. --shard 2/4", s, maxShards)
	}
	return Shard{I: i, N: n}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// cost is what a case adds to its shard's wall time.
func cost(c Case) time.Duration { return c.Planned() + rowSetup }

// clusterKey groups cases that can share a pooled store cluster (same store kind and size,
// and no store clock fault, which starts servers under libfaketime).
func clusterKey(c Case) string {
	ft := ""
	if s, err := nemesis.Parse(c.Row.Fault); err == nil && s.Needs().StoreClock {
		ft = "/faketime"
	}
	return fmt.Sprintf("%s/%d%s", c.Row.Store, c.Row.StoreNodes, ft)
}

// shardGroup is a run of cases kept on one shard.
type shardGroup struct {
	key   string
	cases []int // indexes into the case list, in matrix order
	cost  time.Duration
}

// Partition splits cases into n shards: every case in exactly one shard, each shard's cases
// in matrix order. Cases that can share a store cluster stay together unless their group
// alone exceeds an even share, in which case it is cut into consecutive pieces of at most
// that share; pieces go longest first to the least loaded shard (ties: lower shard). The
// result depends only on the cases, so every runner of a fan-out computes the same split.
// Bound: a shard's cost exceeds total/n by less than the largest piece (at most total/n,
// and usually one group of a few rows).
func Partition(cases []Case, n int) [][]Case {
	if n < 1 {
		n = 1
	}
	var total time.Duration
	byKey := map[string]*shardGroup{}
	var groups []*shardGroup
	for i, c := range cases {
		k := clusterKey(c)
		g := byKey[k]
		if g == nil {
			g = &shardGroup{key: k}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.cases = append(g.cases, i)
		g.cost += cost(c)
		total += cost(c)
	}
	share := total / time.Duration(n)
	var pieces []*shardGroup
	for _, g := range groups {
		if g.cost <= share || len(g.cases) == 1 {
			pieces = append(pieces, g)
			continue
		}
		cur := &shardGroup{key: g.key}
		for _, i := range g.cases {
			if cur.cost > 0 && cur.cost+cost(cases[i]) > share {
				pieces = append(pieces, cur)
				cur = &shardGroup{key: g.key}
			}
			cur.cases = append(cur.cases, i)
			cur.cost += cost(cases[i])
		}
		pieces = append(pieces, cur)
	}
	slices.SortStableFunc(pieces, func(a, b *shardGroup) int {
		if c := cmp.Compare(b.cost, a.cost); c != 0 {
			return c
		}
		return cmp.Compare(a.cases[0], b.cases[0])
	})
	load := make([]time.Duration, n)
	members := make([][]int, n)
	for _, p := range pieces {
		best := 0
		for s := 1; s < n; s++ {
			if load[s] < load[best] {
				best = s
			}
		}
		load[best] += p.cost
		members[best] = append(members[best], p.cases...)
	}
	out := make([][]Case, n)
	for s, idx := range members {
		slices.Sort(idx)
		for _, i := range idx {
			out[s] = append(out[s], cases[i])
		}
	}
	return out
}

// Select returns shard s of cases.
func (s Shard) Select(cases []Case) []Case {
	if s.N <= 1 {
		return cases
	}
	return Partition(cases, s.N)[s.I-1]
}
