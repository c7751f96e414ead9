package harness

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
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

// Outcome is what a run produced.
type Outcome struct {
	Verdict  string   `json:"verdict"` // valid | invalid | unknown
	Reasons  []string `json:"reasons,omitempty"`
	Findings []string `json:"findings,omitempty"` // verdict-neutral findings (overlaps, unavailability, ...)
	// Explanations tell how each reason code came about (first occurrence), "code: story".
	Explanations []string `json:"explanations,omitempty"`
	// LateWrites places an invalid run's flagged writes against the next leader's
	// election (checkers.LateWrites): in flight at the takeover, or sent after it.
	LateWrites string `json:"late_writes,omitempty"`
	// Cause is an invalid run's cause class and its evidence (checkers.Cause).
	Cause        string        `json:"cause,omitempty"`
	RunDir       string        `json:"run_dir"`
	RunID        string        `json:"run_id"`
	Counts       Counts        `json:"counts"`
	Leaders      []string      `json:"leaders"` // candidates elected at least once
	StoreVersion string        `json:"store_version,omitempty"`
	Elapsed      time.Duration `json:"elapsed"`
	// HealError is set when undoing a fault failed; the run still tore everything down.
	HealError string `json:"heal_error,omitempty"`
	// Leftovers lists Docker objects of the run that teardown could not remove.
	Leftovers string `json:"leftovers,omitempty"`
	// StoreReuse says whether a pooled store cluster was fresh or reused (Config.StorePool).
	StoreReuse string `json:"store_reuse,omitempty"`
	// StoreContainers are the Docker ids of the store nodes, in node order.
	StoreContainers []string `json:"store_containers,omitempty"`
}

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
	if results.LateWrites != nil {
		out.LateWrites = results.LateWrites.String()
	}
	if results.Cause != nil {
		out.Cause = results.Cause.String()
	}
	// The explanations ride along in results.json for tools and the terminal summary.
	doc, err := reports.WriteResults(out.RunDir, results)
	for _, x := range doc.Explanations {
		out.Explanations = append(out.Explanations, x.Code+": "+x.Text)
	}
	return err
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
