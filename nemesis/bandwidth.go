package nemesis

import (
	"context"
	"fmt"
	"strconv"
)

// bandwidth: the target candidate's store connections pass at most rate KB/s per direction
// (Toxiproxy's bandwidth toxic in the store fault proxy). Small requests barely notice; a
// large value, a watch's backlog or a batch of writes queue behind each other.
type bandwidthKind struct{}

func (bandwidthKind) def() kindDef {
	return kindDef{
		Traits: Traits{
			Name:          "bandwidth",
			Summary:       "limit a candidate's store connections to rate KB/s per direction (Toxiproxy between candidates and store)",
			DefaultTarget: TargetLeader,
			DefaultFor:    "2xTTL",
			Classes:       []NodeClass{ClassCandidate},
			Proxy:         true,
			Colour:        "#9a6700",
			Started:       "throttled towards the store",
			Healed:        "back to full bandwidth towards the store",
		},
		params: []paramDef{
			{"rate", "KB/s (1 KB = 1000 bytes) passed per direction and connection, a whole number >= 1, e.g. 1 or 64", "1", checkKBps},
			{"dir", "out (requests the candidate sends) | in (answers it receives) | both", "both", oneOf("in", "out", "both")},
		},
	}
}

func checkKBps(v string) error {
	r, err := strconv.ParseInt(v, 10, 64)
	if err != nil || r < 1 {
		return fmt.Errorf("want a whole number of KB/s >= 1, e.g. rate=16")
	}
	return nil
}

func (bandwidthKind) plan(p *planner, f *FaultSpec, pf *PlannedFault) error {
	return planProxyTargets(p, pf)
}

func (bandwidthKind) apply(ctx context.Context, px *proxyToxics, pf PlannedFault) (*applied, error) {
	rate, err := strconv.ParseInt(pf.Params["rate"], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("rate=%q: %w", pf.Params["rate"], err)
	}
	return px.add(ctx, pf, streamToxics(pf, "bandwidth", map[string]any{"rate": rate}))
}
