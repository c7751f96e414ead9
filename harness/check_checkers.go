package harness

import (
	"context"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// runCheckers checks the run directory with the parameters stored in its config.json (the
// same call `splitbrain check` makes) and returns the verdict, its reasons as text and the
// results document for results.json. Porcupine visualizations go into the run directory.
func runCheckers(ctx context.Context, dir string) (string, []string, *checkers.Results, history.Info, error) {
	p, err := checkers.LoadParams(dir)
	if err != nil {
		return VerdictUnknown, nil, nil, history.Info{}, err
	}
	p.OutputDir = dir
	res, info, err := checkers.CheckDir(ctx, dir, p)
	if err != nil {
		return VerdictUnknown, nil, nil, info, err
	}
	reasons := make([]string, 0, len(res.Reasons))
	for _, r := range res.Reasons {
		reasons = append(reasons, string(r.Severity)+": "+r.Message)
	}
	return string(res.Verdict), reasons, res, info, nil
}
