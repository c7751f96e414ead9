package nemesis

import "context"

// half-open: the target candidate's store connections stay open but carry nothing (the
// proxy accepts and drops the data: Toxiproxy's timeout toxic). Requests hang instead of
// failing, new connections are accepted and hang too; the candidate notices only through its
// own timeouts. close-after > 0 lets the proxy close a connection once nothing has been sent
// into it for that long (a middlebox dropping an idle flow). The heal closes the connections
// held (their lost bytes cannot be replayed), so new ones pass.
type halfOpenKind struct{}

func (halfOpenKind) def() kindDef {
	return kindDef{
		Traits: Traits{
			Name:          "half-open",
			Summary:       "a candidate's store connections stay open but carry no data; requests hang until the candidate's own timeouts (Toxiproxy timeout toxic)",
			DefaultTarget: TargetLeader,
			DefaultFor:    "3xTTL",
			Classes:       []NodeClass{ClassCandidate},
			Proxy:         true,
			Silences:      true,
			Colour:        "#57606a",
			Started:       "connected to the store but cut off (requests hang)",
			Healed:        "given fresh store connections (the hung ones closed)",
		},
		params: []paramDef{
			{"close-after", "0s: connections stay open and silent until the heal; > 0 (whole ms, NxTTL allowed): the proxy closes a connection once nothing was sent into it for this long", "0s", checkDur(false)},
			{"dir", "out (requests vanish) | in (the store gets requests, answers vanish) | both", "both", oneOf("in", "out", "both")},
		},
	}
}

func (halfOpenKind) plan(p *planner, f *FaultSpec, pf *PlannedFault) error {
	if err := planProxyTargets(p, pf); err != nil {
		return err
	}
	_, err := wholeMs(pf, "close-after", true)
	return err
}

func (halfOpenKind) apply(ctx context.Context, px *proxyToxics, pf PlannedFault) (*applied, error) {
	ms, err := wholeMs(&pf, "close-after", true)
	if err != nil {
		return nil, err
	}
	return px.add(ctx, pf, streamToxics(pf, "timeout", map[string]any{"timeout": ms}))
}
