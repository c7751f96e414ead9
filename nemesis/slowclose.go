package nemesis

import "context"

// slow-close: a close of the target candidate's store connection reaches the other side
// close-delay late; data passes unchanged. dir=out: the store keeps the session of a
// candidate that has closed (a session lock or ephemeral node outlives its owner's exit);
// dir=in: the candidate learns late that the store closed it. A close still held at the heal
// is passed on then (Toxiproxy re-reads the closed stream when the toxic leaves the chain;
// TestSlowCloseThroughRealProxy checks it).
type slowCloseKind struct{}

func (slowCloseKind) def() kindDef {
	return kindDef{
		Traits: Traits{
			Name:          "slow-close",
			Summary:       "a candidate's store connections pass their close (FIN) on close-delay late; data passes unchanged (Toxiproxy)",
			DefaultTarget: TargetLeader,
			DefaultFor:    "3xTTL",
			Classes:       []NodeClass{ClassCandidate},
			Proxy:         true,
			Colour:        "#6639ba",
			Started:       "closing its store connections slowly",
			Healed:        "closing its store connections at once again",
		},
		params: []paramDef{
			{"close-delay", "how long a close is held, whole ms or NxTTL, > 0; a close still held when the fault heals is passed on then", "2xTTL", checkPositiveDur},
			{"dir", "out (the candidate's close reaches the store late) | in (the store's close reaches the candidate late) | both", "both", oneOf("in", "out", "both")},
		},
	}
}

func (slowCloseKind) plan(p *planner, f *FaultSpec, pf *PlannedFault) error {
	if err := planProxyTargets(p, pf); err != nil {
		return err
	}
	_, err := wholeMs(pf, "close-delay", false)
	return err
}

func (slowCloseKind) apply(ctx context.Context, px *proxyToxics, pf PlannedFault) (*applied, error) {
	ms, err := wholeMs(&pf, "close-delay", false)
	if err != nil {
		return nil, err
	}
	return px.add(ctx, pf, streamToxics(pf, "slow_close", map[string]any{"delay": ms}))
}
