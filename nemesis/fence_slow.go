package nemesis

import "context"

// fence-slow: the run's fence device carries out every request delay= late, and answers
// then; a caller that gave up meanwhile still has its power-off carried out.
type fenceSlowKind struct{}

func (fenceSlowKind) def() kindDef {
	return kindDef{
		Traits: Traits{
			Name:          "fence-slow",
			Summary:       "the run's fence device carries out and answers every request delay= late (also when the caller gave up)",
			DefaultTarget: TargetAllCandidates,
			DefaultFor:    "4xTTL",
			Targets:       fenceKindTargets,
			Classes:       []NodeClass{ClassCandidate},
			Fence:         true,
			Colour:        "#8c959f",
			Started:       "fenced slowly",
			Healed:        "fenced at full speed again",
		},
		params: []paramDef{
			{"delay", "how late each request is carried out and answered, Go duration or NxTTL, > 0", "2xTTL", checkPositiveDur},
		},
	}
}

func (fenceSlowKind) apply(ctx context.Context, ff *fenceFaults, pf PlannedFault) (*applied, error) {
	return ff.set(ctx, pf, FenceSlow, "delay")
}
