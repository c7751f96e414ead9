package candidates

// bully (negative control, Garcia-Molina 1982): a node that suspects the leader sends
// ELECTION to every higher-ranked node; a live higher node answers and runs its own
// election; a node that hears no answer within a round makes itself leader (epoch = max
// seen + 1) and broadcasts COORDINATOR. A higher node that hears a lower coordinator or
// election bullies it by electing itself. Failure detection is a heartbeat timeout. Nothing
// asks for a majority: each side of a partition elects its own highest reachable node.

import (
	"context"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var bullyElection = runtime.Spec{
	Name: "bully", Store: storekinds.None, Negative: true,
	Summary: "NEGATIVE CONTROL: bully election among the candidates (no quorum); token = epoch (max seen + 1)",
	Timing:  peerRecipeTiming,
	New: func(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
		return newPeerRecipe(env, bully{})
	},
}

type bully struct{}

func (bully) startElection(n *peerNode) {
	if n.quiet {
		return
	}
	up := higher(n)
	if len(up) == 0 {
		n.becomeLeader()
		n.broadcast(peerMsg{Kind: msgCoordinator, Leader: n.id, Epoch: n.term})
		return
	}
	n.electing, n.answered = true, false
	n.roundEnd = time.Now().Add(n.t.Round)
	for _, p := range up {
		n.send(p, peerMsg{Kind: msgElection, Epoch: n.epoch})
	}
}

func (b bully) tick(n *peerNode, now time.Time) {
	// A round with no answer from any higher node: this node is the highest alive.
	if n.electing && !n.answered && !n.quiet && now.After(n.roundEnd) {
		n.becomeLeader()
		n.broadcast(peerMsg{Kind: msgCoordinator, Leader: n.id, Epoch: n.term})
		return
	}
	// Answered but no coordinator within a further round and Fail: start over (detect).
	if n.electing && n.answered && now.Before(n.roundEnd.Add(n.t.Fail)) {
		return
	}
	n.detect(now)
}

func (b bully) handle(n *peerNode, m peerMsg) {
	switch m.Kind {
	case msgElection:
		if n.quiet || n.rank(m.From) > n.rank(n.id) {
			return
		}
		n.send(m.From, peerMsg{Kind: msgAnswer, Epoch: n.epoch})
		if n.leading {
			n.send(m.From, peerMsg{Kind: msgCoordinator, Leader: n.id, Epoch: n.term})
		} else if !n.electing {
			b.startElection(n)
		}
	case msgAnswer:
		if n.electing {
			n.answered = true
		}
	case msgCoordinator, msgHeartbeat:
		switch {
		case m.Leader == n.id:
		case n.rank(m.Leader) > n.rank(n.id) || n.quiet:
			n.follow(m.Leader, "bullied")
		case n.leading:
			// A lower leader (after a partition heals): bully it with a new election of
			// this node, so the epoch moves past the one the lower side took.
			n.becomeLeader()
			n.broadcast(peerMsg{Kind: msgCoordinator, Leader: n.id, Epoch: n.term})
		case !n.electing:
			b.startElection(n) // bully the lower coordinator
		}
	case msgResign:
		if n.leader == m.From {
			n.leader = ""
			n.lastHeard = time.Time{}
			if !n.electing {
				b.startElection(n)
			}
		}
	}
}
