package suite

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
)

// Observed is what a run showed, reduced to what expectations talk about.
type Observed struct {
	Verdict       string
	Reasons       []string // codes of the verdict's reasons
	Findings      []string // codes of verdict-neutral findings
	Overlaps      int
	Failovers     []time.Duration // fault start → next election, one per failover
	Handoffs      []time.Duration // a leader's handoff SIGTERM → next election, one per handoff
	Unavailable   time.Duration   // longest stretch without an accepted write
	LivenessOK    bool
	FaultsApplied int // faults that started without error
	LeaderHits    int // applied faults whose targets included a candidate leading at their start
	HaveResults   bool
	ResultsError  string
}

// Observe reduces checker results (nil when results.json is missing) and the run's verdict.
func Observe(verdict string, res *checkers.Results) Observed {
	o := Observed{Verdict: verdict}
	if res == nil {
		return o
	}
	o.HaveResults = true
	for _, r := range res.Reasons {
		o.Reasons = appendUnique(o.Reasons, r.Code)
	}
	for _, r := range res.Findings {
		o.Findings = appendUnique(o.Findings, r.Code)
	}
	o.Overlaps = res.Tenures.OverlapCount
	for _, s := range res.Latency.Samples {
		switch {
		case s.Outcome != checkers.OutcomeFailover || s.ElectionNs < 0:
		case s.Kind == "handoff" && s.FaultID == 0:
			o.Handoffs = append(o.Handoffs, time.Duration(s.ElectionNs))
		default:
			o.Failovers = append(o.Failovers, time.Duration(s.ElectionNs))
		}
		if s.FaultID > 0 && s.TouchedLeader {
			o.LeaderHits++
		}
	}
	slices.Sort(o.Failovers)
	slices.Sort(o.Handoffs)
	o.Unavailable = time.Duration(res.Latency.UnavailableMaxNs)
	o.LivenessOK = res.Latency.LivenessOK
	for _, f := range res.Faults {
		if f.Error == "" {
			o.FaultsApplied++
		}
	}
	return o
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// MedianFailover is the median failover, or -1 without any.
func (o Observed) MedianFailover() time.Duration {
	if len(o.Failovers) == 0 {
		return -1
	}
	return o.Failovers[(len(o.Failovers)-1)/2]
}

// MaxFailover is the slowest failover, or -1 without any.
func (o Observed) MaxFailover() time.Duration {
	if len(o.Failovers) == 0 {
		return -1
	}
	return o.Failovers[len(o.Failovers)-1]
}

// SmokeBoundTolerance: in the smoke tier (make test, CI) a failover that overruns its bound
// by up to this factor is reported, not failed: a wall-clock bound on a shared, loaded CI
// machine says more about the machine than about the recipe. make chaos and make nightly
// keep every bound hard; a larger overrun fails everywhere. The chaos tests' bounds follow the
// same factor (internal/boundtest.Tolerance; a test holds the two equal).
const SmokeBoundTolerance = 3

// Compare lists every way the observation differs from the expectation; none means a match.
// faulty says the row injects faults: a faulty row whose faults never applied proved nothing.
func Compare(e Expect, faulty bool, o Observed) []string {
	diffs, _ := CompareTolerant(e, faulty, o, 1)
	return diffs
}

// CompareTolerant is Compare with a failover bound overrun of up to tolerance times the
// bound returned as a note instead of a difference.
func CompareTolerant(e Expect, faulty bool, o Observed, tolerance float64) (diffs, notes []string) {
	if o.Verdict != e.Verdict {
		diffs = append(diffs, fmt.Sprintf("verdict %s, expected %s", o.Verdict, e.Verdict))
	}
	if !o.HaveResults {
		if e.FailoverMax > 0 || e.HandoffMax > 0 || e.Overlap != nil || len(e.Reasons) > 0 || len(e.Findings) > 0 {
			diffs = append(diffs, "no results.json: the expected bounds and reasons cannot be checked")
		}
		return diffs, nil
	}
	if faulty && o.FaultsApplied == 0 {
		diffs = append(diffs, "no fault was applied: the run did not test what the row describes")
	}
	// The bound applies to the failovers that happened; a fault the leader rode out (e.g. a
	// store-majority split whose minority it was not talking to) is no failover to bound.
	if max := o.MaxFailover(); e.FailoverMax > 0 && max > e.FailoverMax {
		msg := fmt.Sprintf("slowest failover %v exceeds the bound %v", max.Round(time.Millisecond), e.FailoverMax)
		if float64(max) <= tolerance*float64(e.FailoverMax) {
			notes = append(notes, fmt.Sprintf("%s (within %gx the bound: reported, not failed, in this tier)", msg, tolerance))
		} else {
			diffs = append(diffs, msg)
		}
	}
	// A row that bounds failover but whose leader-hitting faults never caused one tested no
	// bound (e.g. the fault was stamped after the next leader was already elected).
	if e.FailoverMax > 0 && o.LeaderHits > 0 && len(o.Failovers) == 0 {
		diffs = append(diffs, fmt.Sprintf("%d faults hit the leader but no failover was measured: the bound %v was not tested", o.LeaderHits, e.FailoverMax))
	}
	if e.HandoffMax > 0 {
		if len(o.Handoffs) == 0 {
			diffs = append(diffs, fmt.Sprintf("no handoff was measured: the bound %v was not tested", e.HandoffMax))
		} else if max := o.Handoffs[len(o.Handoffs)-1]; max > e.HandoffMax {
			msg := fmt.Sprintf("slowest handoff %v exceeds the bound %v", max.Round(time.Millisecond), e.HandoffMax)
			if float64(max) <= tolerance*float64(e.HandoffMax) {
				notes = append(notes, fmt.Sprintf("%s (within %gx the bound: reported, not failed, in this tier)", msg, tolerance))
			} else {
				diffs = append(diffs, msg)
			}
		}
	}
	if e.Overlap != nil {
		switch {
		case *e.Overlap && o.Overlaps == 0:
			diffs = append(diffs, "no belief overlap, expected one")
		case !*e.Overlap && o.Overlaps > 0:
			diffs = append(diffs, fmt.Sprintf("%d belief overlap windows, expected none", o.Overlaps))
		}
	}
	for _, c := range e.Reasons {
		if !slices.Contains(o.Reasons, c) {
			diffs = append(diffs, fmt.Sprintf("reason %s missing (got %v)", c, sorted(o.Reasons)))
		}
	}
	for _, c := range e.Findings {
		if !slices.Contains(o.Findings, c) {
			diffs = append(diffs, fmt.Sprintf("finding %s missing (got %v)", c, sorted(o.Findings)))
		}
	}
	return diffs, notes
}

func sorted(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

// Recheck checks the run again from its directory alone, as `splitbrain check` would, and
// lists every way its verdict and reasons differ from the run's own (stored) results: the
// verdict must be a function of the run directory.
func Recheck(ctx context.Context, runDir string, stored *checkers.Results) []string {
	p, err := checkers.LoadParams(runDir)
	if err != nil {
		return []string{"re-check: " + err.Error()}
	}
	p.OutputDir = "" // the re-check writes nothing
	again, _, err := checkers.CheckDir(context.WithoutCancel(ctx), runDir, p)
	if err != nil {
		return []string{"re-check: " + err.Error()}
	}
	var diffs []string
	for _, d := range checkers.Disagreements(stored, again) {
		diffs = append(diffs, "re-check from the run directory disagrees with the run: "+d)
	}
	return diffs
}
