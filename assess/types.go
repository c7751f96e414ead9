package assess

import "github.com/splitbrain-chaos/splitbrain/assess/scorecard"

// The outcome's data types and constants live in the leaf package scorecard, so that a
// reader of a scorecard (splitbraintest) links none of the stores' client libraries; these
// are the same types under their historical names.
type (
	Check       = scorecard.Check
	CheckResult = scorecard.CheckResult
	CheckGrade  = scorecard.CheckGrade
	Graded      = scorecard.Graded
	Scorecard   = scorecard.Scorecard
	Skipped     = scorecard.Skipped
)

const (
	ResourceFenced   = scorecard.ResourceFenced
	ResourceUnfenced = scorecard.ResourceUnfenced

	VerdictNotRun = scorecard.VerdictNotRun
	VerdictError  = scorecard.VerdictError

	ScorecardHTML  = scorecard.ScorecardHTML
	ScorecardJSON  = scorecard.ScorecardJSON
	ScorecardJUnit = scorecard.ScorecardJUnit

	GradeSafe         = scorecard.GradeSafe
	GradeFenceSaves   = scorecard.GradeFenceSaves
	GradeUnsafe       = scorecard.GradeUnsafe
	GradeUnfencedOnly = scorecard.GradeUnfencedOnly
	GradeUnknown      = scorecard.GradeUnknown
	GradeError        = scorecard.GradeError
	GradeNotRun       = scorecard.GradeNotRun
)

// Grade is what a check's runs show: its unfenced result and its fenced rerun (nil when
// none ran). Judged turns a grade into the verdict on the resource an assessment is judged on.
func Grade(u, f *CheckResult) string { return scorecard.Grade(u, f) }

// Judged is a grade's verdict on resource (ResourceFenced or ResourceUnfenced).
func Judged(grade, resource string) string { return scorecard.Judged(grade, resource) }
