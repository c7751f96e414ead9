package candidates

// ring (negative control, Chang & Roberts 1979): the candidates form a logical ring in rank
// order. A node that suspects the leader sends ELECTION carrying its own id to its
// successor; a node forwards the message with the better of the carried id and its own
// (highest rank wins), and a node that receives its own id back has won: it takes epoch =
// max seen + 1 and sends ELECTED around the ring. A successor that does not acknowledge is
// skipped, so a partition that breaks the ring closes two smaller rings, and each elects.

import (
	"context"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var ringElection = runtime.Spec{
	Name: "ring", Store: storekinds.None, Negative: true,
	Summary: "NEGATIVE CONTROL: Chang-Roberts ring election among the candidates (no quorum); token = epoch (max seen + 1)",
	Timing:  ringTiming,
	New: func(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
		return newPeerRecipe(env, ring{})
	},
}

// ringTiming allows one retried round on top of the shared bounds: a forward whose
// acknowledgement is late counts as a ring of one, and the second try waits for the round
// to end (see msgSelf), which under load made a handoff take 1.74 s against 1.5 s.
func ringTiming(c contract.Config) runtime.Timing {
	tm := peerRecipeTiming(c)
	round := time.Duration(max(len(c.Peers), 1)) * 2 * peerTimingFor(c.LeaseTTL).Round
	tm.HandoffBound += round
	tm.FailoverBound += round
	return tm
}

type ring struct{}

// roundTime bounds one trip around the ring: every hop may skip dead successors.
func (ring) roundTime(n *peerNode) time.Duration {
	return time.Duration(len(n.order)) * 2 * n.t.Round
}

func (r ring) startElection(n *peerNode) {
	if n.quiet {
		return
	}
	n.electing, n.participant = true, true
	n.roundEnd = time.Now().Add(r.roundTime(n))
	r.forward(n, peerMsg{Kind: msgElection, Best: n.id, Epoch: n.epoch})
}

// forward sends m to the first successor that acknowledges it; when none does, the message
// comes back to this node as if it had gone round (msgSelf).
func (ring) forward(n *peerNode, m peerMsg) {
	m.From = n.id
	m.Hops++
	i := n.rank(n.id)
	var next []string
	for k := 1; k < len(n.order); k++ {
		// A resigned node is on its way out: a message it acknowledged could die with it.
		if p := n.order[(i+k)%len(n.order)]; time.Now().After(n.left[p]) {
			next = append(next, p)
		}
	}
	go func() {
		for _, p := range next {
			if n.net.Send(p, m) == nil {
				return
			}
		}
		back := m
		back.Kind, back.Leader = msgSelf, m.Kind // the original kind rides in Leader
		select {
		case n.selfq <- back:
		case <-n.done:
		}
	}()
}

func (r ring) tick(n *peerNode, now time.Time) { n.detect(now) }

func (r ring) handle(n *peerNode, m peerMsg) {
	switch m.Kind {
	case msgSelf:
		// Nobody else reachable: the message went round a ring of one.
		// Whoever the message carried is unreachable too, so this node is the best left.
		// Twice in a row, so a slow acknowledgement does not make a leader; the round
		// timeout starts the second try.
		if m.Leader == msgElection {
			if n.alone++; n.alone >= 2 {
				n.alone = 0
				r.handle(n, peerMsg{Kind: msgElection, From: n.id, Best: n.id, Epoch: m.Epoch})
			}
		}
	case msgElection:
		if m.Hops > 2*len(n.order) {
			return // it carries a node that died after sending it: it would circle for ever
		}
		best := m.Best
		switch {
		case best == n.id && !n.quiet:
			n.participant = false
			n.becomeLeader()
			r.forward(n, peerMsg{Kind: msgElected, Leader: n.id, Epoch: n.term})
		case n.rank(best) > n.rank(n.id) || n.quiet:
			n.participant = true
			r.forward(n, m)
		case !n.participant:
			n.participant, n.electing = true, true
			n.roundEnd = time.Now().Add(r.roundTime(n))
			m.Best = n.id
			r.forward(n, m)
		}
		// else: a lower id while this node's own id is already travelling: swallow it.
	case msgElected:
		n.participant = false
		if m.Leader != n.id {
			n.follow(m.Leader, "ring elected")
			r.forward(n, m)
		}
	case msgHeartbeat:
		switch {
		case m.Leader == n.id:
		case !n.leading || n.rank(m.Leader) > n.rank(n.id):
			n.follow(m.Leader, "heartbeat")
		case m.Epoch >= n.term:
			// A lower leader's heartbeat reaches a leader only after a partition heals. The
			// lower one steps down on this node's heartbeat; this node takes a new epoch
			// past the lower side's, as every leader takes max seen + 1.
			n.becomeLeader()
			n.broadcast(peerMsg{Kind: msgHeartbeat, Leader: n.id, Epoch: n.term})
		}
	case msgResign:
		if n.leader == m.From {
			n.leader = ""
			n.lastHeard = time.Time{}
			if !n.electing {
				r.startElection(n)
			}
		}
	}
}
