package shrink

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
)

// MaxReplayErrorsInARow stops a replay: that many tries in a row that could not run (no
// Docker engine, a setup that always fails) say the next ones will not either, and each
// leaves a run directory behind.
const MaxReplayErrorsInARow = 3

// Replay runs the recorded run again, times times, with its concrete plan, and reads each
// verdict back. A try that errors counts as not reproduced and is reported (Outcome.Err);
// it stops early on cancellation and after MaxReplayErrorsInARow errors in a row, returning
// an error.
func Replay(ctx context.Context, rec *Recorded, times int, configure func(i int, c *harness.Config), each func(i int, o Outcome, err error)) ([]Outcome, error) {
	var outs []Outcome
	inARow := 0
	for i := 1; i <= times; i++ {
		if ctx.Err() != nil {
			return outs, context.Cause(ctx)
		}
		cfg := rec.Config
		if cfg.Plan != nil {
			p := *cfg.Plan
			p.Faults = slices.Clone(p.Faults)
			cfg.Plan = &p
		}
		if configure != nil {
			configure(i, &cfg)
		}
		t0 := time.Now()
		out, err := harness.Run(ctx, cfg)
		o := Outcome{Elapsed: time.Since(t0), Verdict: harness.VerdictUnknown}
		if out != nil {
			o.RunDir = out.RunDir
		}
		if err == nil {
			o.Verdict, o.Codes, err = ReadVerdict(o.RunDir)
		}
		o.Failed = err == nil && o.Verdict == rec.Verdict && slices.Equal(o.Codes, rec.Codes)
		if err != nil {
			o.Err = err.Error()
		}
		if each != nil {
			each(i, o, err)
		}
		outs = append(outs, o)
		if err == nil {
			inARow = 0
			continue
		}
		if inARow++; inARow >= MaxReplayErrorsInARow && i < times {
			return outs, fmt.Errorf("%d replays in a row could not run, so no more are started (last error: %w)", inARow, err)
		}
	}
	return outs, nil
}

// ReplaySummary says how often the original verdict and codes came back, and what came
// instead: "invalid stale-write-accepted in 7/10 (valid in 3/10)".
func ReplaySummary(rec *Recorded, outs []Outcome) string {
	same := 0
	other := map[string]int{}
	for _, o := range outs {
		if o.Failed {
			same++
			continue
		}
		other[Label(o.Verdict, o.Codes)]++
	}
	s := fmt.Sprintf("%s in %d/%d", Label(rec.Verdict, rec.Codes), same, len(outs))
	if len(other) > 0 {
		labels := make([]string, 0, len(other))
		for l := range other {
			labels = append(labels, l)
		}
		sort.Strings(labels)
		var parts []string
		for _, l := range labels {
			parts = append(parts, fmt.Sprintf("%s in %d/%d", l, other[l], len(outs)))
		}
		s += " (" + strings.Join(parts, "; ") + ")"
	}
	return s
}
