package nemesis

import "context"

// fence-lying: the run's fence device answers a power-off "off" at once and kills the node
// lag= later (a power switch that acknowledges before the node is down). A STONITH leader
// that trusts the answer acts while its predecessor still runs.
type fenceLyingKind struct{}

func (fenceLyingKind) def() kindDef {
	return kindDef{
		Traits: Traits{
			Name:          "fence-lying",
			Summary:       "the run's fence device answers a power-off \"off\" at once and kills the node lag= later (acknowledges before the node is down)",
			DefaultTarget: TargetAllCandidates,
			DefaultFor:    "4xTTL",
			Targets:       fenceKindTargets,
			Classes:       []NodeClass{ClassCandidate},
			Fence:         true,
			Colour:        "#cf222e",
			Started:       "had a lying fence device (off acknowledged before the kill)",
			Healed:        "had an honest fence device again",
		},
		params: []paramDef{
			{"lag", "how long after the acknowledgement the node is really killed, Go duration or NxTTL, > 0", "2xTTL", checkPositiveDur},
		},
	}
}

func (fenceLyingKind) apply(ctx context.Context, ff *fenceFaults, pf PlannedFault) (*applied, error) {
	return ff.set(ctx, pf, FenceLying, "lag")
}
