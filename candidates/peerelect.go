package candidates

// The skeleton shared by the textbook elections (bully.go, ring.go): ranks, epoch, a
// heartbeat-timeout failure detector and the link to the runtime's Recipe interface. The
// algorithm decides how an election runs; neither has a quorum, which is why both are
// negative controls. Rank is the position in SPLITBRAIN_PEERS (c1 lowest); higher wins.
//
// Token: the epoch, "max epoch seen + 1" taken by a node when it makes itself leader and
// carried on every message. It is the counter such implementations keep to tell elections
// apart; both sides of a partition mint the same next epoch, so it fences nothing there.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
)

// Message kinds.
const (
	msgElection    = "election"
	msgAnswer      = "answer"      // bully: a higher node is alive and takes over
	msgCoordinator = "coordinator" // bully: the winner announces itself
	msgElected     = "elected"     // ring: the winner's announcement travelling the ring
	msgHeartbeat   = "heartbeat"   // the leader, to everyone, every heartbeat period
	msgResign      = "resign"      // a leader that steps down on purpose
	msgSelf        = "self"        // ring: no successor reachable, the message came back
	msgEpoch       = "epoch"       // tells a leader of a higher epoch than its own
)

// peerTiming is the failure detector's timing: heartbeat every HB, a follower suspects the
// leader after Fail without one, an election round waits Round for answers.
type peerTiming struct{ HB, Fail, Round time.Duration }

func peerTimingFor(ttl time.Duration) peerTiming {
	return peerTiming{HB: max(ttl/8, 10*time.Millisecond), Fail: max(ttl/2, 50*time.Millisecond), Round: max(ttl/8, 10*time.Millisecond)}
}

// peerRecipeTiming is the runtime Timing of both controls: a crash is noticed after Fail
// (plus up to one heartbeat), an election takes a round or two (ring: a trip around).
func peerRecipeTiming(c contract.Config) runtime.Timing {
	t := peerTimingFor(c.LeaseTTL)
	return runtime.Timing{TTL: t.Fail, Renew: t.HB, HandoffBound: 2*t.Round + time.Second,
		FailoverBound: t.Fail + t.HB + 3*t.Round + time.Second}
}

// peerAlgo is one election algorithm on the shared node; its methods run with n.mu held.
type peerAlgo interface {
	startElection(n *peerNode)
	handle(n *peerNode, m peerMsg)
	tick(n *peerNode, now time.Time) // called every heartbeat period
}

type peerNode struct {
	id    string
	ranks map[string]int
	order []string // peers by rank, lowest first
	net   peerNet
	t     peerTiming
	algo  peerAlgo
	logf  func(string, ...any)

	mu        sync.Mutex
	leader    string // who this node believes leads ("" = nobody known)
	epoch     int64  // highest epoch seen
	lastHeard time.Time
	electing  bool
	roundEnd  time.Time // when the current election round gives up
	quiet     bool      // resigned: takes no part until the next Campaign
	leading   bool
	term      int64 // epoch of this node's own leadership
	lose      context.CancelCauseFunc
	changed   chan struct{}
	selfq     chan peerMsg // messages a node sends itself (ring: no successor answered)
	done      chan struct{}
	wg        sync.WaitGroup
	// algorithm state
	left        map[string]time.Time // nodes that resigned, skipped by the ring until then
	answered    bool                 // bully: a higher node answered this round
	participant bool                 // ring: this node forwarded an election message this round
	alone       int                  // ring: election messages in a row that found no successor
}

func newPeerNode(id string, order []string, net peerNet, t peerTiming, algo peerAlgo, logf func(string, ...any)) *peerNode {
	n := &peerNode{id: id, ranks: map[string]int{}, order: order, net: net, t: t, algo: algo, logf: logf,
		left: map[string]time.Time{}, changed: make(chan struct{}, 1), selfq: make(chan peerMsg, 16), done: make(chan struct{}), lastHeard: time.Now()}
	for i, p := range order {
		n.ranks[p] = i
	}
	n.wg.Add(1)
	go n.loop()
	return n
}

// newPeerRecipe builds a bully or ring candidate from the contract's peers.
func newPeerRecipe(env runtime.Env, algo peerAlgo) (runtime.Recipe, error) {
	if env.ListenPort == 0 || len(env.Peers) == 0 {
		return nil, fmt.Errorf("%s needs %s and %s (run with --store none)", env.Recipe, contract.EnvPeers, contract.EnvListenPort)
	}
	t := peerTimingFor(env.LeaseTTL)
	net, err := listenPeers(env.ListenPort, env.PeerAddrs(), 2*t.Round)
	if err != nil {
		return nil, err
	}
	return newPeerNode(env.NodeID, env.PeerIDs(), net, t, algo, env.Logf), nil
}

func (n *peerNode) rank(id string) int {
	if r, ok := n.ranks[id]; ok {
		return r
	}
	return -1
}

func (n *peerNode) loop() {
	defer n.wg.Done()
	tick := time.NewTicker(n.t.HB)
	defer tick.Stop()
	for {
		select {
		case <-n.done:
			return
		case m := <-n.selfq:
			n.mu.Lock()
			n.algo.handle(n, m)
			n.mu.Unlock()
		case m := <-n.net.Inbox():
			n.mu.Lock()
			n.epochRules(m)
			n.algo.handle(n, m)
			n.mu.Unlock()
		case now := <-tick.C:
			n.mu.Lock()
			n.algo.tick(n, now)
			n.mu.Unlock()
		}
	}
}

// epochRules keep every node's epoch at the maximum seen and a leader's token ahead of it:
// a node told of a leader with an older epoch than it knows answers with its epoch
// (msgEpoch), and a leader told so steps down and holds an election (the other side of a
// healed partition had elected; the election puts the winner's epoch ahead of both). Announcements by other leaders are the algorithm's business.
func (n *peerNode) epochRules(m peerMsg) {
	n.alone = 0
	if m.Kind == msgResign {
		n.left[m.From] = time.Now().Add(n.t.Fail) // it exits or campaigns again by then
	} else {
		delete(n.left, m.From)
	}
	if m.Epoch > n.epoch {
		n.epoch = m.Epoch
	}
	if n.leading && m.Kind == msgEpoch && m.Epoch > n.term {
		// Another node led with a newer epoch. Minting max seen + 1 here at once made two
		// leaders that met at start-up bump to the same epoch together (token-duplicate in a
		// fault-free run, make test 2026-11-28): the higher one bullies the lower with the
		// same next number. Step down and hold an election instead; the highest node alive
		// wins it with a new epoch.
		n.stepDown(fmt.Sprintf("told of epoch %d, newer than its own %d", m.Epoch, n.term))
		n.leader = ""
		n.electing = false
		n.algo.startElection(n)
		return
	}
	if m.Leader != "" && m.Leader != n.id && m.Epoch < n.epoch && m.Kind != msgEpoch {
		n.send(m.Leader, peerMsg{Kind: msgEpoch, Epoch: n.epoch})
	}
}

// detect is the failure detector, called from tick: a leader heartbeats; a follower that
// heard nothing from a leader for Fail starts an election; a round that timed out restarts.
func (n *peerNode) detect(now time.Time) {
	switch {
	case n.quiet:
	case n.leading:
		n.broadcast(peerMsg{Kind: msgHeartbeat, Leader: n.id, Epoch: n.term})
	case n.electing && now.After(n.roundEnd):
		n.electing = false
		n.algo.startElection(n)
	case !n.electing && now.Sub(n.lastHeard) > n.t.Fail:
		if n.leader != "" {
			n.logf("no heartbeat from leader %s for %v: election", n.leader, now.Sub(n.lastHeard).Round(time.Millisecond))
		}
		n.leader = ""
		n.algo.startElection(n)
	}
}

// becomeLeader makes this node leader with a new epoch and wakes Campaign.
func (n *peerNode) becomeLeader() {
	if n.lose != nil { // already leading: the old term ends, Campaign reports the new one
		n.lose(errors.New("re-elected with a new epoch"))
		n.lose = nil
	}
	n.epoch++
	n.term, n.leading, n.leader, n.electing = n.epoch, true, n.id, false
	n.logf("leader with epoch %d (max seen %d)", n.term, n.term-1)
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

// follow accepts leader l (announced with epoch e); a leading node steps down.
func (n *peerNode) follow(l string, why string) {
	n.leader, n.lastHeard, n.electing = l, time.Now(), false
	if n.leading && l != n.id {
		n.stepDown(fmt.Sprintf("%s: %s leads", why, l))
	}
}

func (n *peerNode) stepDown(why string) {
	n.leading = false
	if n.lose != nil {
		n.lose(errors.New(why))
		n.lose = nil
	}
}

// send delivers m in the background; it never blocks the loop.
func (n *peerNode) send(to string, m peerMsg) {
	m.From = n.id
	go n.net.Send(to, m)
}

func (n *peerNode) broadcast(m peerMsg) {
	for _, p := range n.order {
		if p != n.id {
			n.send(p, m)
		}
	}
}

func (n *peerNode) Campaign(ctx context.Context) (runtime.Term, error) {
	n.mu.Lock()
	n.quiet = false
	n.mu.Unlock()
	for {
		n.mu.Lock()
		if n.leading && n.lose == nil {
			lost, lose := context.WithCancelCause(context.Background())
			n.lose = lose
			term := n.term
			n.mu.Unlock()
			valid := func() error {
				n.mu.Lock()
				defer n.mu.Unlock()
				if !n.leading || n.term != term {
					return errors.New("no longer leader")
				}
				return nil
			}
			return runtime.Term{Token: term, Lost: lost, Valid: valid}, nil
		}
		n.mu.Unlock()
		select {
		case <-ctx.Done():
			return runtime.Term{}, ctx.Err()
		case <-n.changed:
		case <-time.After(n.t.HB):
		}
	}
}

// Resign steps down and tells everyone, who then elect at once instead of waiting for the
// failure detector; the node stays quiet until it campaigns again.
func (n *peerNode) Resign(ctx context.Context) error {
	n.mu.Lock()
	n.quiet = true
	wasLeading := n.leading
	if wasLeading {
		n.stepDown("resigned")
		n.leader = ""
	}
	m := peerMsg{Kind: msgResign, From: n.id, Epoch: n.epoch}
	n.mu.Unlock()
	if !wasLeading {
		return nil
	}
	// Sent before returning: on SIGTERM the process exits right after.
	var wg sync.WaitGroup
	for _, p := range n.order {
		if p != n.id {
			wg.Add(1)
			go func() { defer wg.Done(); n.net.Send(p, m) }()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

func (n *peerNode) Close() error {
	close(n.done)
	n.wg.Wait()
	return n.net.Close()
}

// state is what tests look at: whom this node follows and whether it leads.
func (n *peerNode) state() (leader string, leading bool, term int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leader, n.leading, n.term
}

func higher(n *peerNode) []string {
	i := slices.Index(n.order, n.id)
	return n.order[i+1:]
}
