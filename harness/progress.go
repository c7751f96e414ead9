package harness

import (
	"fmt"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/progress"
)

// startProgress feeds the progress display (a redrawn line on a terminal, plain periodic
// lines in CI logs, or JSON) until the returned stop function is called; total is the
// timed phases' length.
func (j *journal) startProgress(total time.Duration) (stop func()) {
	if j.quiet {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond) // the display throttles itself
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				j.prog.Update(j.status(total))
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// status maps the live state onto the progress display's status.
func (j *journal) status(total time.Duration) progress.Status {
	s := j.state.Snapshot()
	j.mu.Lock()
	from, phaseAt := j.lifeStart, j.phaseAt
	j.mu.Unlock()
	elapsed := time.Since(from)
	switch s.Phase {
	case "", "setup", "teardown": // untimed: how long this phase has taken so far
		if phaseAt.IsZero() {
			phaseAt = j.started
		}
		elapsed, total = time.Since(phaseAt), 0
	}
	st := progress.Status{Phase: s.Phase, Elapsed: elapsed, Total: total,
		ActiveFaults: s.ActiveFaults, Elections: int64(s.Counts.Elections),
		WritesAccepted: int64(s.Counts.WritesAccepted), WritesRejected: int64(s.Counts.WritesRejected)}
	if st.Phase == "" {
		st.Phase = "starting"
	}
	for _, l := range s.Leaders {
		st.Leaders = append(st.Leaders, progress.Leader{Node: l.Node, Token: l.Token})
	}
	return st
}

// printSummary prints the end-of-run summary.
func (j *journal) printSummary(o *Outcome) {
	if o == nil {
		return
	}
	// Reasons and findings can quote candidate output: no raw control characters.
	j.prog.Summary(progress.Printable(FormatSummary(o)), map[string]any{"verdict": o.Verdict, "run_dir": o.RunDir, "reasons": o.Reasons, "findings": o.Findings})
}

// maxSummaryFindings caps the findings listed in the terminal summary.
const maxSummaryFindings = 10

// FormatSummary renders the outcome as a short multi-line summary.
func FormatSummary(o *Outcome) string {
	var b strings.Builder
	leaders := "none"
	if len(o.Leaders) > 0 {
		leaders = strings.Join(o.Leaders, ", ")
	}
	fmt.Fprintf(&b, "elections: %d (leaders: %s)\n", o.Counts.Elections, leaders)
	fmt.Fprintf(&b, "writes: %d accepted (%d stale), %d rejected\n", o.Counts.WritesAccepted, o.Counts.StaleAccepted, o.Counts.WritesRejected)
	if o.Counts.ContractViolations > 0 {
		fmt.Fprintf(&b, "contract violations: %d\n", o.Counts.ContractViolations)
	}
	if o.HealError != "" {
		fmt.Fprintf(&b, "HEAL FAILED: %s\n", o.HealError)
	}
	if o.Leftovers != "" {
		fmt.Fprintf(&b, "LEFTOVERS: %s\n", o.Leftovers)
	}
	fmt.Fprintf(&b, "verdict: %s\n", strings.ToUpper(o.Verdict))
	for _, reason := range o.Reasons {
		fmt.Fprintf(&b, "  - %s\n", reason)
	}
	if o.LateWrites != "" {
		fmt.Fprintf(&b, "late writes, %s\n", o.LateWrites)
	}
	if o.Cause != "" {
		fmt.Fprintf(&b, "cause, %s\n", o.Cause)
	}
	for _, x := range o.Explanations {
		fmt.Fprintf(&b, "why %s\n", x)
	}
	if len(o.Findings) > 0 {
		// Shown for every verdict: a valid run can still overlap or stall (docs/checkers.md).
		fmt.Fprintf(&b, "findings (not part of the verdict): %d\n", len(o.Findings))
		for i, f := range o.Findings {
			if i == maxSummaryFindings {
				fmt.Fprintf(&b, "  ... %d more in results.json\n", len(o.Findings)-i)
				break
			}
			fmt.Fprintf(&b, "  - %s\n", f)
		}
	}
	fmt.Fprintf(&b, "run dir: %s (%v)\n", o.RunDir, o.Elapsed.Round(time.Millisecond))
	return b.String()
}
