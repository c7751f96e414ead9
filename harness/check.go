package harness

import (
	"context"

	"fmt"
	"path/filepath"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
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

// conclude reads the history back, runs the checkers and writes results.json. A run that
// failed or was interrupted is still analysed as far as it got, but its verdict can only
// be "invalid" (a proven violation) or "unknown", never "valid".
func (r *run) conclude(ctx context.Context, runErr error) (*Outcome, error) {
	out := &Outcome{
		Verdict: VerdictUnknown, RunDir: r.dir, RunID: r.runID, Counts: r.state.Snapshot().Counts,
		Elapsed: time.Since(r.started), Leftovers: r.leftover,
	}
	if r.cluster != nil {
		out.StoreVersion = r.cluster.Version()
		for _, n := range r.cluster.Nodes() {
			out.StoreContainers = append(out.StoreContainers, n.ID())
		}
	}
	if r.lease != nil {
		out.StoreReuse = r.lease.note
	}
	if r.healErr != nil {
		out.HealError = r.healErr.Error()
	}
	evs, info, err := history.ReadFile(filepath.Join(r.dir, HistoryFile))
	if err != nil {
		return out, fmt.Errorf("read back the history: %w", err)
	}
	if info.TruncatedTail {
		out.Reasons = append(out.Reasons, "history has a truncated last line")
	}
	out.Leaders = electedNodes(evs)
	r.mu.Lock()
	started := !r.lifeStart.IsZero()
	r.mu.Unlock()
	if !started {
		// Setup failed: no candidate ran under observation, there is nothing to judge.
		out.Reasons = append(out.Reasons, "the run never got past setup; nothing was checked")
		return out, nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout)
	defer cancel()
	if ctx.Err() != nil {
		// Interrupted: a quick look only, so Ctrl-C returns promptly.
		var c2 context.CancelFunc
		cctx, c2 = context.WithTimeout(cctx, 10*time.Second)
		defer c2()
	}
	verdict, reasons, results, err := runCheckers(cctx, evs, r.checkParams())
	if err != nil {
		out.Reasons = append(out.Reasons, "checkers failed: "+err.Error())
		return out, fmt.Errorf("check: %w", err)
	}
	out.Verdict = verdict
	out.Reasons = append(out.Reasons, reasons...)
	for _, f := range results.Findings {
		out.Findings = append(out.Findings, f.Message)
	}
	if out.Verdict == VerdictValid {
		switch {
		case runErr != nil:
			msg := "the run did not complete: " + runErr.Error()
			out.Verdict = VerdictUnknown
			out.Reasons = append(out.Reasons, msg)
			demote(results, "run-incomplete", msg)
		case r.healErr != nil:
			msg := "a fault could not be healed, so recovery is not evidence: " + r.healErr.Error()
			out.Verdict = VerdictUnknown
			out.Reasons = append(out.Reasons, msg)
			demote(results, "heal-failed", msg)
		}
	}
	// The explanations ride along in results.json for tools and the terminal summary.
	doc := reports.NewResultsDocument(results)
	for _, x := range doc.Explanations {
		out.Explanations = append(out.Explanations, x.Code+": "+x.Text)
	}
	if err := writeJSON(filepath.Join(r.dir, ResultsFile), doc); err != nil {
		return out, err
	}
	return out, nil
}
