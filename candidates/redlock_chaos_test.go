//go:build chaos

package candidates_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/boundtest"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// TestRedlockQuorum: Redlock needs a majority of its independent servers. With 2 of 5
// frozen (hung, as a stalled server looks) the leader keeps its lock; with 3 of 5 it loses
// it within a TTL and nobody can be elected; once the servers are thawed a leader is elected
// within the crash failover bound. (Election, handoff and crash failover: TestRecipes.)
func TestRedlockQuorum(t *testing.T) {
	def, err := candidates.Registry.Lookup("redlock")
	if err != nil {
		t.Fatal(err)
	}
	run := platformtest.NewRun(t, 5*time.Minute)
	cl := run.LaunchStore(t, stores.Options{Kind: storekinds.RedisMulti, LogDir: t.TempDir()})
	nodes := cl.Nodes()
	if len(nodes) != 5 {
		t.Fatalf("redis-multi started %d servers, want the default 5", len(nodes))
	}
	eps, err := cl.HostEndpoints(run.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	var frozen []*platform.Node
	t.Cleanup(func() {
		for _, n := range frozen {
			n.Thaw(run.Ctx)
		}
	})
	freeze := func(ns ...*platform.Node) {
		for _, n := range ns {
			if err := n.Freeze(run.Ctx); err != nil {
				t.Fatal(err)
			}
			frozen = append(frozen, n)
		}
	}

	g := newGroup(t, def.Describe().Store, eps, "t-redlock-quorum", selfCommand("redlock"))
	tm := def.TimingFor(g.cfg)
	for _, n := range []string{"c1", "c2", "c3"} {
		g.start(n)
	}
	lead := g.waitElected(time.Minute, "")
	g.waitAccepted(lead.Node, lead.Token, 3) // leading and writing before the freezes

	// A minority hung: the leader keeps extending on the other three. A holder holds only the
	// servers its winning attempt reached (often a bare 3 of 5; Extend does not take more), so
	// the servers to freeze are chosen by where its key is: free ones first, so that exactly
	// three of its servers stay up.
	order := redlockFreezeOrder(t, run.Ctx, eps, "splitbrain:redlock:t-redlock-quorum")
	before := g.acceptedFrom(lead.Node, lead.Token)
	at := history.Now()
	freeze(nodes[order[0]], nodes[order[1]])
	// The lock must outlive its TTL several times over on the three servers left: the
	// leader has a write accepted under its token three TTLs after the freeze (the write is
	// the event; a loaded machine only makes it come later), a TTL's worth of writes at least.
	g.waitAcceptedAt(lead.Node, lead.Token, at+int64(3*tm.TTL))
	g.waitAccepted(lead.Node, lead.Token, before+int(tm.TTL/g.cfg.WriteInterval))
	if d := g.stepDownAfter(lead.Node, at); d >= 0 {
		t.Fatalf("leader %s stepped down %v after 2 of 5 servers froze: a majority was still there", lead.Node, d)
	}

	// A majority hung: the extend fails, the leader steps down, nobody can win.
	// The bound runs from when the third server is frozen (the freeze itself can take a
	// while on a loaded engine): an extend begun before that may still have reached it.
	at = history.Now()
	freeze(nodes[order[2]])
	frozenT := history.Now()
	// Wait for the step-down itself; its time is what is bounded below.
	sd := time.Duration(-1)
	for deadline := time.Now().Add(time.Minute); sd < 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		sd = g.stepDownAfter(lead.Node, at)
	}
	d := sd - time.Duration(frozenT-at)
	switch {
	case sd < 0:
		t.Fatalf("leader %s did not step down within a minute after 3 of 5 servers froze, want within the TTL %v", lead.Node, tm.TTL)
	case d > tm.TTL:
		t.Fatalf("leader %s stepped down %v after 3 of 5 servers froze, want within the TTL %v", lead.Node, d, tm.TTL)
	}
	t.Logf("3 of 5 frozen (the freeze took %v): %s stepped down after %v", time.Duration(frozenT-at), lead.Node, d)
	g.settle(lead)
	// An absence check: nobody may win without a majority. The leader's key runs out on the
	// two live servers within a TTL of its step-down (its last extend came before), and the
	// waiters then try every Retry for another TTL; no event says "an attempt failed" (the
	// recipe logs it once, not per attempt), so the window is those two TTLs from the
	// step-down. A loaded machine can only hide a wrong election, not fail a correct recipe.
	// sleep: the absence window above, counted from the step-down event.
	time.Sleep(time.Duration(at + int64(sd) + int64(2*tm.TTL) - history.Now()))
	g.mu.Lock()
	var elected []string
	for _, e := range g.events {
		if e.Kind == history.KindElected && e.T > at {
			elected = append(elected, e.Node)
		}
	}
	g.mu.Unlock()
	if len(elected) > 0 {
		t.Fatalf("elected %v with 3 of 5 servers frozen: no majority, no lock", elected)
	}

	// Servers back: a leader soon. The frozen keys' PX ran out meanwhile, but the acquires
	// queued in a frozen server's socket run at the thaw and hold the key there for a TTL
	// (quiet machine: elected 2.05 s after the thaw, against the 2.65 s failover bound; a
	// loaded make test once took 3.3 s counted from before the thaws). So: counted from the
	// last thaw, within the failover bound plus one second.
	thawStart := history.Now()
	for _, n := range frozen {
		if err := n.Thaw(run.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	frozen = nil
	thawed := history.Now()
	bound := tm.FailoverBound + time.Second
	next := g.waitElected(boundtest.Wait(bound)+5*time.Second, "")
	boundtest.Check(t, fmt.Sprintf("a new leader after the servers came back (the thaws took %v)", time.Duration(thawed-thawStart)),
		time.Duration(next.T-thawed), bound)
	if d := time.Duration(next.T - thawed); d < 0 {
		t.Logf("servers thawed in %v: %s elected %v before the last thaw returned (a majority was back)", time.Duration(thawed-thawStart), next.Node, -d)
	} else {
		t.Logf("servers thawed in %v: %s elected %v after the last", time.Duration(thawed-thawStart), next.Node, d)
	}
	if next.Token <= lead.Token {
		t.Errorf("token %d after %d: acquisition times must grow without clock faults", next.Token, lead.Token)
	}
	g.waitAccepted(next.Node, next.Token, 3)
	g.stopAll()
	g.checkResource()
	g.mu.Lock()
	defer g.mu.Unlock()
	if v := g.violations(); len(v) > 0 {
		t.Errorf("belief overlaps or contract violations:\n%s", strings.Join(v, "\n"))
	}
}

// redlockFreezeOrder lists the servers' indexes, those without the holder's key first. The
// holder's value is the one a majority of the servers hold.
func redlockFreezeOrder(t *testing.T, ctx context.Context, eps []string, key string) []int {
	t.Helper()
	values := make([]string, len(eps))
	count := map[string]int{}
	for i, ep := range eps {
		cli := redis.NewClient(&redis.Options{Addr: ep, DisableIdentity: true})
		v, err := cli.Get(ctx, key).Result()
		cli.Close()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("GET %s on %s: %v", key, ep, err)
		}
		values[i] = v
		if v != "" {
			count[v]++
		}
	}
	holder := ""
	for v, n := range count {
		if n > len(eps)/2 {
			holder = v
		}
	}
	if holder == "" {
		t.Fatalf("no value of %s is on a majority of the servers (%v): nobody holds the lock", key, values)
	}
	var free, held []int
	for i, v := range values {
		if v == holder {
			held = append(held, i)
		} else {
			free = append(free, i)
		}
	}
	t.Logf("the leader's key is on servers %v (free: %v)", held, free)
	return append(free, held...)
}
