package nemesis

import "context"

// fence-unreachable: the run's fence device answers nothing and does nothing while it
// lasts; a request is held until its caller gives up (or the heal), then its connection is
// cut. A STONITH recipe that waits for a confirmed power-off must not act meanwhile.
type fenceUnreachableKind struct{}

func (fenceUnreachableKind) def() kindDef {
	return kindDef{Traits: Traits{
		Name:          "fence-unreachable",
		Summary:       "the run's fence device answers no request and powers nothing off (a black-holed BMC); heal after for=",
		DefaultTarget: TargetAllCandidates,
		DefaultFor:    "4xTTL",
		Targets:       fenceKindTargets,
		Classes:       []NodeClass{ClassCandidate},
		Fence:         true,
		Colour:        "#57606a",
		Started:       "could not be fenced (fence device unreachable)",
		Healed:        "could be fenced again",
	}}
}

func (fenceUnreachableKind) apply(ctx context.Context, ff *fenceFaults, pf PlannedFault) (*applied, error) {
	return ff.set(ctx, pf, FenceUnreachable, "")
}
