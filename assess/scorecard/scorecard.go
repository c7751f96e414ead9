// Package scorecard holds the data of an assessment's outcome (docs/assess.md): the checks,
// their runs' results and grades, and the scorecard that folds them into one verdict and a
// summary line. It imports only the standard library, so a user's go test that reads a
// scorecard (splitbraintest) does not link the stores' client libraries that running the
// checks needs (package assess, which uses these types).
package scorecard

import (
	"fmt"
	"strings"
	"time"
)

// Verdicts of a run, as the harness and the checkers give them (harness.Verdict*).
const (
	VerdictValid   = "valid"
	VerdictInvalid = "invalid"
	VerdictUnknown = "unknown"
)

// Resource modes an assessment is judged on.
const (
	ResourceFenced   = "fenced"
	ResourceUnfenced = "unfenced"
)

// Check is one battery entry: a harness run configuration and what it is for.
type Check struct {
	Name    string `json:"name"`
	Purpose string `json:"purpose"`
	// Catches names the mistake a failure here points at, for the scorecard's explanation.
	Catches string `json:"catches"`
	// Fault is a nemesis profile or spec; Paced runs a profile's event-paced form (one cycle).
	Fault    string `json:"fault"`
	Paced    bool   `json:"paced,omitempty"`
	Workload string `json:"workload,omitempty"`
	Until    string `json:"until,omitempty"`
	// Duration is the faults phase (its timeout when the phase ends on events).
	Duration time.Duration `json:"duration"`
	// LeaderWork, when set, is passed as SPLITBRAIN_LEADER_WORK (the zombie window).
	LeaderWork *time.Duration `json:"leader_work,omitempty"`
	// Resource is the resource mode this check runs on: unfenced first, fenced on a rerun.
	Resource string `json:"resource"`
	// Explore: a bounded `explore` search instead of one fixed fault (Fault then names the
	// schedule of the try being replayed on the fenced resource, when set).
	Explore bool `json:"explore,omitempty"`
	// OutageTTLs: the fault holds the whole store down this many TTLs, so no failover can
	// come sooner; the derived bound adds them.
	OutageTTLs int `json:"outage_ttls,omitempty"`
	// Seed of the run (0 = Options.Seed).
	Seed int64 `json:"seed,omitempty"`
	// Fence is the fence fault kind a fence check breaks the device with. The device is the
	// protection under test, so the check is judged on the unfenced resource (a token check
	// there would hide the fence's failure) with no fenced rerun, and a valid run in which no
	// power-off reached the device while the fault was on is unknown: the fault did nothing.
	Fence string `json:"fence,omitempty"`
}

// JudgedOn is the resource c's grade is judged on when the assessment is judged on resource.
func (c Check) JudgedOn(resource string) string {
	if c.Fence != "" {
		return ResourceUnfenced
	}
	return resource
}

// Key is the check's identity in the resume state and the JUnit file: its name, plus
// /fenced for a fenced rerun.
func (c Check) Key() string {
	if c.Resource == ResourceFenced {
		return c.Name + "/fenced"
	}
	return c.Name
}

// Skipped is a battery check that does not apply to this store or candidate, and why.
type Skipped struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// CheckResult is the outcome of one check's run (a fenced rerun is a result of its own).
type CheckResult struct {
	Check Check `json:"check"`
	// Verdict of the run: valid, invalid, unknown; "not-run" when it did not fit the budget
	// or was interrupted, "error" when the harness failed before a verdict.
	Verdict string `json:"verdict"`
	// Reason is the first reason code of an invalid or unknown verdict; Explanation the
	// checkers' one-line story of it.
	Reason      string   `json:"reason,omitempty"`
	Explanation string   `json:"explanation,omitempty"`
	Reasons     []string `json:"reasons,omitempty"`
	// Unfenceable are the invalid reasons no fence can prevent (a duplicate or regressing
	// token, an exclusive-belief overlap): the check is unsafe whatever the resource.
	Unfenceable []string `json:"unfenceable,omitempty"`
	Findings    []string `json:"findings,omitempty"`
	RunDir      string   `json:"run_dir,omitempty"`
	// Fenced: the run was on the fenced resource (a rerun after an unfenced failure).
	Fenced bool `json:"fenced"`
	// Failovers: fault start to next election, over the run's failovers.
	Failovers   int           `json:"failovers"`
	FailoverP50 time.Duration `json:"failover_p50"`
	FailoverP99 time.Duration `json:"failover_p99"`
	FailoverMax time.Duration `json:"failover_max"`
	// Bound is the derived failover bound (recipe's bound + detection + slack); 0 = none.
	Bound time.Duration `json:"bound"`
	// Spec and Seed are the fault schedule that ran (explore: the find's, or the last try's).
	Spec  string        `json:"spec,omitempty"`
	Seed  int64         `json:"seed,omitempty"`
	Tries int           `json:"tries,omitempty"` // explore: runs tried
	Wall  time.Duration `json:"wall"`
	Error string        `json:"error,omitempty"`
	// NotRun says why a check has no verdict of its own (budget, interrupted).
	NotRun string `json:"not_run,omitempty"`
}

// Verdicts of a result beyond the harness's valid / invalid / unknown.
const (
	VerdictNotRun = "not-run"
	VerdictError  = "error"
)

// Done reports whether the result is final: a resumed assessment skips it.
func (r CheckResult) Done() bool {
	return r.Verdict == VerdictValid || r.Verdict == VerdictInvalid || r.Verdict == VerdictUnknown
}

// OverBound reports whether the slowest failover exceeded the bound.
func (r CheckResult) OverBound() bool {
	return r.Bound > 0 && r.Failovers > 0 && r.FailoverMax > r.Bound
}

// Scorecard files in the out dir.
const (
	ScorecardHTML  = "scorecard.html"
	ScorecardJSON  = "scorecard.json"
	ScorecardJUnit = "junit.xml"
)

// Grades of a check: what its unfenced run and, where that failed, its fenced rerun showed.
const (
	GradeSafe       = "safe"        // valid on the unfenced resource
	GradeFenceSaves = "fence-saves" // invalid unfenced, valid fenced: safe only with a fence
	GradeUnsafe     = "unsafe"      // invalid on the fenced resource too
	// GradeUnfencedOnly: invalid unfenced, the fenced rerun proved nothing (or did not run).
	GradeUnfencedOnly = "unsafe-unfenced"
	GradeUnknown      = "unknown"
	GradeError        = "error"
	GradeNotRun       = "not-run"
)

// Scorecard is an assessment's outcome: one result per run, a grade and verdict per check,
// the overall verdict and the summary line a reviewer pastes.
type Scorecard struct {
	Target   string        `json:"target"` // "recipe etcd-election", "candidate /path/x.py"
	Store    string        `json:"store"`
	Resource string        `json:"judged_on"` // the resource the verdict is judged on
	Seed     int64         `json:"seed"`
	Started  time.Time     `json:"started"`
	Elapsed  time.Duration `json:"elapsed"`
	Budget   time.Duration `json:"budget"`
	// Total is the wall time of every invocation of this assessment (resumes included),
	// Invocations their number.
	Total       time.Duration `json:"total"`
	Invocations int           `json:"invocations"`
	Args        []string      `json:"args,omitempty"`
	// Verdict: invalid when a check is unsafe on the judged resource; unknown when a check
	// proved nothing or did not run; valid when every check of the battery came out safe.
	Verdict string        `json:"verdict"`
	Summary string        `json:"summary"`
	Checks  []CheckGrade  `json:"checks"`
	Results []CheckResult `json:"results"`
	Skipped []Skipped     `json:"left_out,omitempty"`
	// Tokenless: the candidate is a library that gives no fencing token, so a check unsafe
	// unfenced has no fenced rerun and nothing could fence it.
	Tokenless bool `json:"tokenless,omitempty"`
}

// CheckGrade is one check's line of the scorecard.
type CheckGrade struct {
	Name    string `json:"name"`
	Grade   string `json:"grade"`
	Verdict string `json:"verdict"` // on the judged resource
}

// ByCheck returns each check's unfenced result and fenced rerun (nil when none), in order.
func (s *Scorecard) ByCheck() (names []string, unfenced, fenced map[string]*CheckResult) {
	unfenced, fenced = map[string]*CheckResult{}, map[string]*CheckResult{}
	for i := range s.Results {
		r := &s.Results[i]
		if r.Fenced {
			fenced[r.Check.Name] = r
			continue
		}
		names = append(names, r.Check.Name)
		unfenced[r.Check.Name] = r
	}
	return names, unfenced, fenced
}

// Grade is what a check's runs show: its unfenced result and its fenced rerun (nil when
// none ran). Judged turns a grade into the verdict on the resource an assessment is judged on.
func Grade(u, f *CheckResult) string {
	switch u.Verdict {
	case VerdictValid:
		return GradeSafe
	case VerdictInvalid:
		switch {
		case len(u.Unfenceable) > 0 || f != nil && len(f.Unfenceable) > 0:
			return GradeUnsafe
		case f == nil:
			return GradeUnfencedOnly
		case f.Verdict == VerdictValid:
			return GradeFenceSaves
		case f.Verdict == VerdictInvalid:
			return GradeUnsafe
		}
		return GradeUnfencedOnly
	case VerdictNotRun:
		return GradeNotRun
	case VerdictError:
		return GradeError
	}
	return GradeUnknown
}

// Judged is a grade's verdict on resource (ResourceFenced or ResourceUnfenced).
func Judged(g, resource string) string {
	switch g {
	case GradeSafe:
		return VerdictValid
	case GradeFenceSaves:
		if resource == ResourceFenced {
			return VerdictValid
		}
		return VerdictInvalid
	case GradeUnsafe:
		return VerdictInvalid
	case GradeUnfencedOnly:
		if resource == ResourceFenced {
			return VerdictUnknown
		}
		return VerdictInvalid
	}
	return VerdictUnknown
}

// Finish grades every check, folds the verdict and writes the summary line.
func (s *Scorecard) Finish() {
	names, unf, fen := s.ByCheck()
	s.Checks = nil
	groups := map[string][]string{}
	invalid, unknown := false, false
	for _, n := range names {
		g := Grade(unf[n], fen[n])
		v := Judged(g, unf[n].Check.JudgedOn(s.Resource))
		s.Checks = append(s.Checks, CheckGrade{Name: n, Grade: g, Verdict: v})
		label := n
		if f := fen[n]; g == GradeUnfencedOnly && f != nil && f.Verdict == VerdictNotRun {
			label += " (fenced rerun not run: " + f.NotRun + ")"
		}
		group := g
		if g == GradeUnfencedOnly && unf[n].Check.Fence != "" {
			// The device is this check's fence (no fenced rerun): "whether a fence saves it"
			// is not open, the fence it relies on failed.
			label += " (" + unf[n].Reason + ")"
			group = groupFenceFailed
		} else if g == GradeUnfencedOnly && s.Tokenless {
			// No open question either: the library has no token a resource could check.
			label += " (" + unf[n].Reason + ")"
			group = groupNoToken
		}
		if g == GradeUnsafe {
			why := unf[n]
			if f := fen[n]; f != nil && f.Verdict == VerdictInvalid {
				why = f
			}
			if len(why.Unfenceable) > 0 {
				label += " (" + strings.Join(why.Unfenceable, ", ") + ")"
			} else if why.Reason != "" {
				label += " (" + why.Reason + ")"
			}
		}
		groups[group] = append(groups[group], label)
		invalid = invalid || v == VerdictInvalid
		unknown = unknown || v == VerdictUnknown
	}
	switch {
	case invalid:
		s.Verdict = VerdictInvalid
	case unknown || len(names) == 0:
		s.Verdict = VerdictUnknown
	default:
		s.Verdict = VerdictValid
	}
	parts := []string{fmt.Sprintf("safe under %d of %d checks", len(groups[GradeSafe]), len(names))}
	add := func(g, text string) {
		if len(groups[g]) > 0 {
			parts = append(parts, text+" "+strings.Join(groups[g], ", "))
		}
	}
	add(GradeFenceSaves, "unsafe without fencing (the fence saves it) under")
	add(GradeUnfencedOnly, "unsafe without fencing (whether a fence saves it is open) under")
	add(groupNoToken, "UNSAFE, and no fence can save it (the library gives no fencing token), under")
	add(groupFenceFailed, "UNSAFE when its fence device misbehaves (the power-off it relied on did not protect the resource) under")
	add(GradeUnsafe, "UNSAFE even with fencing under")
	add(GradeUnknown, "nothing proved under")
	add(GradeError, "harness error under")
	if n := len(groups[GradeNotRun]); n > 0 {
		parts = append(parts, fmt.Sprintf("%d not run (%s)", n, strings.Join(groups[GradeNotRun], ", ")))
	}
	if fo := s.worstFailover(); fo != "" {
		parts = append(parts, fo)
	}
	s.Summary = fmt.Sprintf("%s on %s: %s; %s", s.Target, s.Store, strings.ToUpper(s.Verdict), strings.Join(parts, "; "))
}

// groupFenceFailed gathers, in the summary, the fence checks that failed: judged on the
// unfenced resource because the fence device is the protection under test.
const groupFenceFailed = "fence-failed"

// groupNoToken gathers the checks a token-less library failed: nothing could fence them.
const groupNoToken = "no-token"

// worstFailover names the check with the slowest failover p99 among valid runs, against its
// bound.
func (s *Scorecard) worstFailover() string {
	var worst *CheckResult
	for i := range s.Results {
		r := &s.Results[i]
		if r.Verdict != VerdictValid || r.Failovers == 0 {
			continue
		}
		if worst == nil || r.FailoverP99 > worst.FailoverP99 {
			worst = r
		}
	}
	if worst == nil {
		return ""
	}
	t := fmt.Sprintf("failover p99 %s (%s)", secs(worst.FailoverP99), worst.Check.Name)
	if worst.Bound > 0 {
		t += " vs " + secs(worst.Bound) + " bound"
	}
	return t
}

func secs(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", d.Seconds()), "0"), ".") + " s"
}

// Graded is one check's outcome: its grade and verdict on the judged resource (Verdict
// valid is the only pass) and its runs, the unfenced one first, then the fenced rerun.
type Graded struct {
	CheckGrade
	Runs []CheckResult
}
