package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

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

// conclude computes the verdict from the run directory alone, exactly as `splitbrain check`
// does: everything that can change it (interrupted, heal failure, harness error) was
// recorded in the history as it happened, so nothing here adds or removes a reason.
func (r *run) conclude(ctx context.Context) (*Outcome, error) {
	out := &Outcome{
		Verdict: VerdictUnknown, RunDir: r.log.dir, RunID: r.runID, Counts: r.log.state.Snapshot().Counts,
		Elapsed: time.Since(r.log.started), Leftovers: r.leftover,
	}
	if store := r.cluster.storeCluster(); store != nil {
		out.StoreVersion = store.Version()
		for _, n := range store.Nodes() {
			out.StoreContainers = append(out.StoreContainers, n.ID())
		}
	}
	out.StoreReuse = r.cluster.note()
	if r.healErr != nil {
		out.HealError = r.healErr.Error()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout)
	defer cancel()
	// Also after an interrupt the check is the full one (Porcupine bounded by its own
	// timeout): a shortened one could time out where `splitbrain check` does not and so
	// disagree with it. A second Ctrl-C ends the process at once.
	verdict, reasons, results, info, err := runCheckers(cctx, r.log.dir)
	if err != nil {
		out.Reasons = append(out.Reasons, "checkers failed: "+err.Error())
		return out, fmt.Errorf("check: %w", err)
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
	if err := writeJSON(filepath.Join(r.log.dir, ResultsFile), doc); err != nil {
		return out, err
	}
	return out, nil
}
