package nemesis

import (
	"context"
	"fmt"
	"strconv"
)

// loss: iptables `statistic --mode random` DROP with probability p on the links between
// the target and its peers, like a lossy network. dir=both drops each packet in each
// direction independently (a request/response then fails with 1-(1-p)^2); dir=in drops
// only what the target receives. Delay is not offered: there is no netem here.
type lossKind struct{}

func (lossKind) def() kindDef {
	return kindDef{
		Traits: Traits{
			Name:          "loss",
			Summary:       "drop a random share p of packets between target and peer (iptables statistic)",
			DefaultTarget: TargetLeader,
			DefaultFor:    "2xTTL",
			Classes:       []NodeClass{ClassCandidate, ClassStore},
			Network:       true,
			Colour:        "#bf3989",
			Started:       "losing packets",
			Healed:        "no longer losing packets",
		},
		params: []paramDef{
			{"p", "probability that a packet is dropped, 0 < p <= 1", "0.3", checkProbability},
			{"peer", "the other side: all | store | candidates | leader | store-leader | node:NAME", "all", checkPeer},
			{"dir", "in (packets the target receives) | out (packets it sends) | both", "both", oneOf("in", "out", "both")},
		},
	}
}

func (lossKind) plan(p *planner, f *FaultSpec, pf *PlannedFault) error {
	return checkPeerTopology(pf.Params["peer"], p.topo)
}

func (lossKind) apply(ctx context.Context, r *netRules, pf PlannedFault) (*applied, error) {
	prob, err := strconv.ParseFloat(pf.Params["p"], 64)
	if err != nil {
		return nil, fmt.Errorf("p=%q: %w", pf.Params["p"], err)
	}
	targets, err := r.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	peers, err := r.resolvePeers(ctx, pf.Params["peer"], targets)
	if err != nil {
		return nil, err
	}
	g := Grudge{}
	dir := pf.Params["dir"]
	if dir == "in" || dir == "both" {
		for k, v := range OneWay(targets, peers) {
			g[k] = v
		}
	}
	if dir == "out" || dir == "both" {
		for k, v := range OneWay(peers, targets) {
			g.add(k, v...)
		}
	}
	return r.applyGrudge(ctx, pf, g, targets, ActionDrop, prob)
}
