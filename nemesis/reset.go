package nemesis

import "context"

// reset: every store connection of the target candidate is torn down at its first data in
// an affected direction, and so is every new one (Toxiproxy's reset_peer toxic): requests
// fail at once instead of hanging. Connections opened during the fault get a TCP reset;
// Toxiproxy can set that up only when a connection starts, so one already open is closed
// with a FIN (the candidate reads end-of-stream). The data that set it off is dropped;
// with dir=in the store has received and applied the request before the answer is lost.
type resetKind struct{}

func (resetKind) def() kindDef {
	return kindDef{
		Traits: Traits{
			Name:          "reset",
			Summary:       "tear down a candidate's store connections at their first data, new ones too: requests fail at once (Toxiproxy reset_peer)",
			DefaultTarget: TargetLeader,
			DefaultFor:    "3xTTL",
			Classes:       []NodeClass{ClassCandidate},
			Proxy:         true,
			Silences:      true,
			Colour:        "#cf222e",
			Started:       "reset by the store on every request",
			Healed:        "able to talk to the store again",
		},
		params: []paramDef{
			{"dir", "out (a request resets the connection before the store sees it) | in (the store applies the request, its answer resets the connection) | both", "both", oneOf("in", "out", "both")},
		},
	}
}

func (resetKind) plan(p *planner, f *FaultSpec, pf *PlannedFault) error {
	return planProxyTargets(p, pf)
}

func (resetKind) apply(ctx context.Context, px *proxyToxics, pf PlannedFault) (*applied, error) {
	return px.add(ctx, pf, streamToxics(pf, "reset_peer", map[string]any{"timeout": 0}))
}
