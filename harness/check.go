package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/reports"
)

// Verdicts.
const (
	VerdictValid   = "valid"
	VerdictInvalid = "invalid"
	VerdictUnknown = "unknown"
)

// checkTimeout bounds the analysis after the run (Porcupine has its own, shorter budget).
const checkTimeout = 5 * time.Minute

// conclude computes out's verdict from the run directory alone, exactly as `splitbrain check`
// does: everything that can change it (interrupted, heal failure, harness error) was
// recorded in the history as it happened, so nothing here adds or removes a reason.
func conclude(ctx context.Context, out *Outcome) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout)
	defer cancel()
	// Also after an interrupt the check is the full one (Porcupine bounded by its own
	// timeout): a shortened one could time out where `splitbrain check` does not and so
	// disagree with it. A second Ctrl-C ends the process at once.
	verdict, reasons, results, info, err := runCheckers(cctx, out.RunDir)
	if err != nil {
		out.Reasons = append(out.Reasons, "checkers failed: "+err.Error())
		return fmt.Errorf("check: %w", err)
	}
	if info.TruncatedTail {
		out.Reasons = append(out.Reasons, "history has a truncated last line")
	}
	out.Verdict = verdict
	out.Reasons = append(out.Reasons, reasons...)
	for _, f := range results.Findings {
		out.Findings = append(out.Findings, f.Message)
	}
	out.Leaders = electedNodes(results.Tenures.Tenures)
	// The explanations ride along in results.json for tools and the terminal summary.
	doc := reports.NewResultsDocument(results)
	for _, x := range doc.Explanations {
		out.Explanations = append(out.Explanations, x.Code+": "+x.Text)
	}
	return writeJSON(filepath.Join(out.RunDir, ResultsFile), doc)
}

// electedNodes lists the candidates that were elected at least once.
func electedNodes(ts []checkers.Tenure) []string {
	seen := map[string]bool{}
	for _, tn := range ts {
		seen[tn.Node] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
