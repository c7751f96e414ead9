package checkers

import (
	"fmt"
	"time"
)

// Verdict of a run. Unknown is never a pass.
type Verdict string

const (
	Valid   Verdict = "valid"
	Invalid Verdict = "invalid"
	Unknown Verdict = "unknown"
)

// ExitCode maps a verdict to the CLI's exit code: 0 valid, 1 invalid, 2 unknown.
func (v Verdict) ExitCode() int {
	switch v {
	case Valid:
		return 0
	case Invalid:
		return 1
	}
	return 2
}

// Severity says what a Reason does to the verdict.
type Severity string

const (
	SevInvalid Severity = "invalid" // makes the run invalid
	SevUnknown Severity = "unknown" // makes the run unknown unless something else makes it invalid
	SevFinding Severity = "finding" // reported, does not change the verdict (e.g. strict mutex, overlap without --require exclusive)
)

// Reason explains a verdict or a finding and points at the events involved.
type Reason struct {
	Checker  string   `json:"checker"` // tenures, resource, tokens, porcupine, latency, contract, history
	Code     string   `json:"code"`    // stable machine name, e.g. "stale-write-accepted"
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	T        int64    `json:"t,omitempty"`     // when (CLOCK_MONOTONIC ns), for linking into the timeline
	EndT     int64    `json:"end_t,omitempty"` // end of the window when the reason is a window
	Nodes    []string `json:"nodes,omitempty"`
	Tokens   []int64  `json:"tokens,omitempty"`
	Seqs     []int64  `json:"seqs,omitempty"` // history seq numbers of the events involved
	Count    int      `json:"count,omitempty"`
	// LastStep is the writer's last reported step before a stale write (its first occurrence):
	// the protocol point its decision to write rested on, e.g. a sidecar poll that said leader.
	LastStep *StepRef `json:"last_step,omitempty"`
}

// StepRef names a step event of a candidate.
type StepRef struct {
	Name string `json:"name"`
	T    int64  `json:"t"`
	Seq  int64  `json:"seq"`
}

// verdictOf folds reasons: any invalid wins, then unknown, else valid.
func verdictOf(reasons []Reason) Verdict {
	v := Valid
	for _, r := range reasons {
		switch r.Severity {
		case SevInvalid:
			return Invalid
		case SevUnknown:
			v = Unknown
		}
	}
	return v
}

// reasonLimit caps how many reasons of one code are listed; the rest are summarised.
const reasonLimit = 20

type reasonList struct {
	list   []Reason
	counts map[string]int
	proto  map[string]Reason
}

func (l *reasonList) add(r Reason) {
	if l.counts == nil {
		l.counts = map[string]int{}
		l.proto = map[string]Reason{}
	}
	l.counts[r.Code]++
	if l.counts[r.Code] <= reasonLimit {
		l.list = append(l.list, r)
	} else if _, ok := l.proto[r.Code]; !ok {
		l.proto[r.Code] = r
	}
}

// done appends one summary reason per code that went over the limit.
func (l *reasonList) done() []Reason {
	out := l.list
	for code, r := range l.proto {
		more := l.counts[code] - reasonLimit
		out = append(out, Reason{Checker: r.Checker, Code: code, Severity: r.Severity, Count: more,
			Message: fmt.Sprintf("%d more %s reasons not listed (see the %s section)", more, code, r.Checker)})
	}
	return out
}

// fmtT renders a history timestamp relative to the run start, for messages.
func fmtT(t, base int64) string {
	return fmt.Sprintf("+%v", time.Duration(t-base).Round(time.Microsecond))
}

func fmtD(d int64) string { return time.Duration(d).Round(time.Microsecond).String() }
