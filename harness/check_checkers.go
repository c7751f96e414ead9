package harness

import (
	"context"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// runCheckers runs every checker and returns the verdict, its reasons as text and the
// results document for results.json.
func runCheckers(ctx context.Context, evs []history.Event, p checkers.Params) (string, []string, *checkers.Results, error) {
	res, err := checkers.Check(ctx, evs, p)
	if err != nil {
		return VerdictUnknown, nil, nil, err
	}
	reasons := make([]string, 0, len(res.Reasons))
	for _, r := range res.Reasons {
		reasons = append(reasons, string(r.Severity)+": "+r.Message)
	}
	return string(res.Verdict), reasons, res, nil
}

// demote turns a valid results document into unknown with the harness's reason, so that
// results.json, the report and the exit code all agree.
func demote(res *checkers.Results, code, msg string) {
	res.Verdict = checkers.Unknown
	res.Reasons = append(res.Reasons, checkers.Reason{Checker: "harness", Code: code, Severity: checkers.SevUnknown, Message: msg})
}
