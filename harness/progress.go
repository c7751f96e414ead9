package harness

import (
	"fmt"
	"strings"
	"time"
)

// startProgress prints a plain status line every ProgressPeriod (CI-log friendly) until
// the returned stop function is called.
func (r *run) startProgress() (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(r.cfg.ProgressPeriod)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintln(r.out, r.statusLine())
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// statusLine is one progress line: phase, elapsed/total, leader and token, active faults,
// elections, writes accepted/rejected.
func (r *run) statusLine() string {
	s := r.state.Snapshot()
	r.mu.Lock()
	from := r.lifeStart
	r.mu.Unlock()
	if from.IsZero() {
		from = r.started // still in setup
	}
	return FormatStatus(s, time.Since(from), r.cfg.TotalTime())
}

// FormatStatus renders a snapshot as one progress line.
func FormatStatus(s Snapshot, elapsed, total time.Duration) string {
	leader := "none"
	if len(s.Leaders) > 0 {
		parts := make([]string, len(s.Leaders))
		for i, l := range s.Leaders {
			parts[i] = fmt.Sprintf("%s(token %d)", l.Node, l.Token)
		}
		leader = strings.Join(parts, "+")
		if len(s.Leaders) > 1 {
			leader += " SPLIT"
		}
	}
	faults := "none"
	if len(s.ActiveFaults) > 0 {
		faults = strings.Join(s.ActiveFaults, ", ")
	}
	phase := s.Phase
	if phase == "" {
		phase = "starting"
	}
	return fmt.Sprintf("[%6.1fs/%v] %-8s leader %s | faults %s | elections %d | writes %d accepted, %d rejected",
		elapsed.Seconds(), total, phase, leader, faults, s.Counts.Elections, s.Counts.WritesAccepted, s.Counts.WritesRejected)
}

// printSummary prints the end-of-run summary.
func (r *run) printSummary(o *Outcome) {
	if o == nil {
		return
	}
	fmt.Fprint(r.out, FormatSummary(o))
}

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
	fmt.Fprintf(&b, "run dir: %s (%v)\n", o.RunDir, o.Elapsed.Round(time.Millisecond))
	return b.String()
}
