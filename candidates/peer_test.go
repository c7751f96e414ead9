package candidates

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"
)

// memNet is an in-memory network for the bully and ring algorithms: partitions (cut links
// fail the send, as a refused or timed-out connection would), crashed nodes, and silent
// message loss (the send "succeeds", the message is gone), all seeded.
type memNet struct {
	mu    sync.Mutex
	inbox map[string]chan peerMsg
	cut   map[[2]string]bool
	down  map[string]bool
	loss  float64
	rng   *rand.Rand
}

func newMemNet(seed int64) *memNet {
	return &memNet{inbox: map[string]chan peerMsg{}, cut: map[[2]string]bool{}, down: map[string]bool{}, rng: rand.New(rand.NewSource(seed))}
}

type memEnd struct {
	net *memNet
	id  string
}

func (m *memNet) endpoint(id string) *memEnd {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inbox[id] = make(chan peerMsg, 1024)
	delete(m.down, id)
	return &memEnd{net: m, id: id}
}

// partition cuts every link between the groups (both directions); no groups heals.
func (m *memNet) partition(groups ...[]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cut = map[[2]string]bool{}
	for i, a := range groups {
		for j, b := range groups {
			if i == j {
				continue
			}
			for _, x := range a {
				for _, y := range b {
					m.cut[[2]string{x, y}] = true
				}
			}
		}
	}
}

func (m *memNet) setLoss(p float64) { m.mu.Lock(); m.loss = p; m.mu.Unlock() }

func (e *memEnd) Send(to string, msg peerMsg) error {
	n := e.net
	n.mu.Lock()
	if n.down[to] || n.down[e.id] || n.cut[[2]string{e.id, to}] {
		n.mu.Unlock()
		// sleep: models a refused dial's cost (a real failed Send never returns at once);
		// no test step waits on it.
		time.Sleep(time.Millisecond)
		return errors.New("unreachable")
	}
	lost := n.rng.Float64() < n.loss
	ch := n.inbox[to]
	n.mu.Unlock()
	if lost {
		return nil
	}
	select {
	case ch <- msg:
	default: // a full inbox drops, like a full socket buffer
	}
	return nil
}

func (e *memEnd) Inbox() <-chan peerMsg {
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	return e.net.inbox[e.id]
}

func (e *memEnd) Close() error {
	e.net.mu.Lock()
	e.net.down[e.id] = true
	e.net.mu.Unlock()
	return nil
}

var testPeerTiming = peerTiming{HB: 10 * time.Millisecond, Fail: 80 * time.Millisecond, Round: 20 * time.Millisecond}

type memCluster struct {
	t     *testing.T
	net   *memNet
	ids   []string
	nodes map[string]*peerNode
	algo  peerAlgo
}

func newMemCluster(t *testing.T, algo peerAlgo, n int) *memCluster {
	c := &memCluster{t: t, net: newMemNet(1), algo: algo, nodes: map[string]*peerNode{}}
	for i := 1; i <= n; i++ {
		c.ids = append(c.ids, fmt.Sprintf("c%d", i))
	}
	for _, id := range c.ids {
		c.start(id)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			nd.Close()
		}
	})
	return c
}

func (c *memCluster) start(id string) {
	c.nodes[id] = newPeerNode(id, c.ids, c.net.endpoint(id), testPeerTiming, c.algo, func(string, ...any) {})
}

func (c *memCluster) crash(id string) {
	c.nodes[id].Close()
	delete(c.nodes, id)
}

// leaders lists the nodes that believe they lead, with their tokens.
func (c *memCluster) leaders() map[string]int64 {
	out := map[string]int64{}
	for id, nd := range c.nodes {
		if _, leading, term := nd.state(); leading {
			out[id] = term
		}
	}
	return out
}

// waitLeaders waits until exactly want lead and every live node follows one of them, for
// three heartbeats in a row. The minute's deadline only ends a hung test: how soon the
// algorithms converge is the failover bound's business (TestRecipes), not a unit test's on
// a loaded machine.
func (c *memCluster) waitLeaders(want ...string) map[string]int64 {
	c.t.Helper()
	const timeout = time.Minute
	deadline := time.Now().Add(timeout)
	stable := 0
	var got map[string]int64
	for time.Now().Before(deadline) {
		got = c.leaders()
		ok := len(got) == len(want)
		for _, w := range want {
			if _, leads := got[w]; !leads {
				ok = false
			}
		}
		for _, nd := range c.nodes {
			if l, _, _ := nd.state(); !slices.Contains(want, l) {
				ok = false
			}
		}
		if ok {
			if stable++; stable >= 3 {
				return got
			}
		} else {
			stable = 0
		}
		time.Sleep(testPeerTiming.HB)
	}
	c.t.Fatalf("leaders %v after %v, want exactly %v followed by every node", got, timeout, want)
	return nil
}

func forEachAlgo(t *testing.T, f func(t *testing.T, algo peerAlgo)) {
	for name, algo := range map[string]peerAlgo{"bully": bully{}, "ring": ring{}} {
		t.Run(name, func(t *testing.T) { t.Parallel(); f(t, algo) })
	}
}

func TestPeerElectsHighestAndFailsOver(t *testing.T) {
	forEachAlgo(t, func(t *testing.T, algo peerAlgo) {
		c := newMemCluster(t, algo, 5)
		first := c.waitLeaders("c5")
		c.crash("c5")
		second := c.waitLeaders("c4")
		if second["c4"] <= first["c5"] {
			t.Errorf("epoch did not grow across leaders: c5 had %d, c4 has %d", first["c5"], second["c4"])
		}
		// The restarted highest node takes over again (bully: at once; ring: when it runs an
		// election, which a follower that hears a lower leader does not; it follows c4).
		c.start("c5")
		if _, ok := algo.(bully); ok {
			third := c.waitLeaders("c5")
			if third["c5"] <= second["c4"] {
				t.Errorf("epoch did not grow: c4 had %d, c5 has %d", second["c4"], third["c5"])
			}
		} else {
			c.waitLeaders("c4")
		}
	})
}

func TestPeerResignHandsOver(t *testing.T) {
	forEachAlgo(t, func(t *testing.T, algo peerAlgo) {
		c := newMemCluster(t, algo, 3)
		c.waitLeaders("c3")
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := c.nodes["c3"].Campaign(ctx); err != nil { // the term the runtime would hold
			t.Fatal(err)
		}
		c.nodes["c3"].Resign(ctx)
		// The quiet node follows; the next one leads without waiting for the detector.
		deadline := time.Now().Add(time.Minute) // only ends a hung test
		for len(c.leaders()) == 0 || c.leaders()["c2"] == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no handover after resign: leaders %v", c.leaders())
			}
			time.Sleep(time.Millisecond)
		}
		t.Logf("handover after resign in %v (failure detector: %v)", time.Since(start), testPeerTiming.Fail)
		if _, c3leads, _ := c.nodes["c3"].state(); c3leads {
			t.Error("c3 still leads after resigning")
		}
	})
}

// TestPeerPartitionElectsOnBothSides is why bully and ring are negative controls: with the
// candidates cut into halves, each side elects its own highest node, both at once.
func TestPeerPartitionElectsOnBothSides(t *testing.T) {
	forEachAlgo(t, func(t *testing.T, algo peerAlgo) {
		c := newMemCluster(t, algo, 5)
		before := c.waitLeaders("c5")
		c.net.partition([]string{"c1", "c2"}, []string{"c3", "c4", "c5"})
		split := c.waitLeaders("c2", "c5")
		t.Logf("split brain: %v (epoch before %d)", split, before["c5"])
		if split["c2"] <= before["c5"] {
			t.Errorf("c2 took epoch %d, not above the %d it had seen", split["c2"], before["c5"])
		}
		c.net.partition() // heal
		healed := c.waitLeaders("c5")
		if healed["c5"] <= split["c2"] {
			t.Errorf("after the heal c5 leads with epoch %d, not past c2's %d: a fenced resource would refuse it for ever", healed["c5"], split["c2"])
		}
	})
}

func TestPeerMessageLoss(t *testing.T) {
	forEachAlgo(t, func(t *testing.T, algo peerAlgo) {
		c := newMemCluster(t, algo, 5)
		c.net.setLoss(0.3)
		c.waitLeaders("c5")
		c.crash("c5")
		c.waitLeaders("c4")
	})
}

// TestPeerLeaderToldOfNewerEpochHoldsAnElection: a leader told of a newer epoch must not
// mint max seen + 1 on the spot. A higher leader that hears this one bullies it with that
// same number, so both would lead with one token (seen in a fault-free make test run at
// start-up, 2026-11-28). It steps down and the election names one winner.
func TestPeerLeaderToldOfNewerEpochHoldsAnElection(t *testing.T) {
	forEachAlgo(t, func(t *testing.T, algo peerAlgo) {
		c := newMemCluster(t, algo, 3)
		c.waitLeaders("c3")
		c.net.partition([]string{"c1", "c2"}, []string{"c3"})
		c2 := c.nodes["c2"]
		term := c.waitLeaders("c2", "c3")["c2"]
		c2.mu.Lock()
		c2.epochRules(peerMsg{Kind: msgEpoch, From: "c1", Epoch: term + 10})
		_, leading, after := c2.leader, c2.leading, c2.term
		c2.mu.Unlock()
		if leading || after != term {
			t.Fatalf("c2 told of epoch %d: leading %v with epoch %d, want stepped down still at %d", term+10, leading, after, term)
		}
		if got := c.waitLeaders("c2", "c3")["c2"]; got <= term+10 {
			t.Errorf("c2 leads again with epoch %d, not above the %d it was told of", got, term+10)
		}
	})
}
