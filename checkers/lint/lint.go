// Package lint reads a fault-free run of a user's candidate (`splitbrain candidate check`)
// and reports where the candidate breaks the contract of docs/candidates.md, in plain words:
// what happened, which rule (R1..R16) it breaks, and how to fix it. It is a pure function of
// the history and the checkers' results, like the checkers.
package lint

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// Problem is one thing the candidate does wrong.
type Problem struct {
	Rule    string   `json:"rule"`    // R1..R16 of docs/candidates.md
	Code    string   `json:"code"`    // stable name, e.g. time-backwards
	Nodes   []string `json:"nodes"`   // candidates it was seen on
	Count   int      `json:"count"`   // occurrences
	What    string   `json:"what"`    // what happened, with the first example
	Fix     string   `json:"fix"`     // how to comply
	Example string   `json:"example"` // the first offending line or event, if any
}

// Options tune the thresholds.
type Options struct {
	// LateAfter: an event that reaches the harness this long after its own t means the
	// candidate's stdout is buffered (R1). Default 500ms.
	LateAfter time.Duration
	// StopGrace: SIGTERM to exit (R11). Default 5s, the teardown grace.
	StopGrace time.Duration
	// Store is the run's store kind: which variables were set, which mistakes apply.
	Store string
	// Logs are the candidates' own output, node -> the text of logs/<node>.log: lines that
	// give a known connection mistake away, and why a candidate exited with code 64.
	Logs map[string]string
	// TakeoverBound: after a handoff SIGTERM the next leader must be elected within this
	// (R16: a longer gap means the waiters' calls or polls outlast the TTL). 0 = not checked.
	TakeoverBound time.Duration
	// CutBound: a leader cut off from its store by a partition fault must stop believing
	// within this (TTL + slack). 0 = not checked.
	CutBound time.Duration
}

// Check lints the history of a fault-free run (with the handoff workload or at least the
// teardown's SIGTERMs). res are the checkers' results of the same history.
func Check(evs []history.Event, res *checkers.Results, opts Options) []Problem {
	if opts.LateAfter <= 0 {
		opts.LateAfter = 2 * time.Second
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 5 * time.Second
	}
	l := &linter{byCode: map[string]*Problem{}, exit64: map[string]bool{}}
	l.violations(res)
	l.events(evs, opts)
	l.logs(opts, l.exit64)
	if opts.TakeoverBound > 0 {
		l.slowTakeovers(evs, opts.TakeoverBound)
	}
	if opts.CutBound > 0 {
		l.cutLeaders(evs, opts.CutBound)
	}
	out := make([]Problem, 0, len(l.order))
	for _, c := range l.order {
		p := l.byCode[c]
		sort.Strings(p.Nodes)
		out = append(out, *p)
	}
	// Causes first: a bad environment or a wrong store address explains the silence and
	// the missing elections reported with it.
	sort.SliceStable(out, func(i, j int) bool { return isCause(out[i].Code) && !isCause(out[j].Code) })
	return out
}

type linter struct {
	byCode map[string]*Problem
	order  []string
	exit64 map[string]bool // candidates that exited with code 64 (bad environment, R15)
}

// add records one occurrence; the first one's text and example are kept.
func (l *linter) add(code, rule, node, what, fix, example string) {
	p, ok := l.byCode[code]
	if !ok {
		p = &Problem{Rule: rule, Code: code, What: what, Fix: fix, Example: truncate(example, 300)}
		l.byCode[code] = p
		l.order = append(l.order, code)
	}
	p.Count++
	if node != "" && !contains(p.Nodes, node) {
		p.Nodes = append(p.Nodes, node)
	}
}

// violations turns the contract checker's findings into problems with a rule and a fix.
func (l *linter) violations(res *checkers.Results) {
	if res == nil {
		return
	}
	for _, v := range res.Contract.Violations {
		switch v.Kind {
		case "malformed-output":
			code, rule, fix := classifyMalformed(v.Detail)
			l.add(code, rule, v.Node, "an event line was rejected: "+strings.TrimPrefix(v.Detail, "contract violation: "), fix, "")
		case "elected-without-token":
			l.add("elected-without-token", "R8", v.Node, v.Detail,
				`print "elected" with "token": an integer >= 1 taken from the store when the election was won`, "")
		case "write-without-tenure":
			l.add("write-outside-tenure", "R6", v.Node, v.Detail,
				`print "elected" before the first write of a term and "stepped-down" only after the last one; a write's call_t must fall inside that span, with the term's token`, "")
		case "out-of-order":
			if strings.Contains(v.Detail, "is earlier than the node's previous event") {
				l.add("time-backwards", "R2", v.Node, v.Detail,
					"read the clock for t inside the lock that serialises your output (or print from one thread), so print order is time order", "")
			} else {
				l.add("out-of-order", "R9", v.Node, v.Detail,
					`print "elected" once per term and "stepped-down" only after "elected"`, "")
			}
		case "bad-request":
			l.add("bad-request", "R6", v.Node, "the resource refused a request: "+v.Detail,
				`POST {SPLITBRAIN_RESOURCE_URL}/write with exactly {"node","token","write_id"} (section 3)`, "")
		default:
			l.add("contract-"+v.Kind, "R4", v.Node, v.Detail, "see docs/candidates.md section 2", "")
		}
	}
}

// classifyMalformed maps the parser's reason to the rule it breaks.
func classifyMalformed(detail string) (code, rule, fix string) {
	switch {
	case strings.Contains(detail, "must not be empty"):
		return "empty-field", "R3", `give "reason", "write_id" and "result" a non-empty value`
	case strings.Contains(detail, "after the harness received"):
		return "not-monotonic-clock", "R5", `take "t" from CLOCK_MONOTONIC in ns (Python time.monotonic_ns()), not the wall clock; or leave "t" out`
	case strings.Contains(detail, `"call_t"`) && strings.Contains(detail, "after"):
		return "call-t-after-t", "R5", `call_t is when the write was sent, t when its answer came: read both from CLOCK_MONOTONIC, call_t first`
	case strings.Contains(detail, "unknown field"), strings.Contains(detail, "does not belong"), strings.Contains(detail, "unknown kind"), strings.Contains(detail, "duplicate"):
		return "unknown-field", "R4", "print only the fields section 2 lists for that kind; put anything else on stderr"
	case strings.Contains(detail, `"token"`) || strings.Contains(detail, "token "):
		return "bad-token", "R8", `"token" is a JSON integer >= 1 taken from the store`
	}
	return "malformed-line", "R4", "one flat JSON object per line, with the fields of section 2; anything else on stderr"
}

// perNode is what the linter follows per candidate.
type perNode struct {
	campaigned, elected, wrote bool
	sigtermAt                  int64 // a SIGTERM not yet followed by an exit
	sigtermSeq                 int64
	leadingAtSigterm           bool
	campaignedAtSigterm        bool // the process took part before the signal (its handler is up)
	steppedSinceSigterm        bool
	leading                    bool
}

// events follows each candidate through the history.
func (l *linter) events(evs []history.Event, opts Options) {
	nodes := map[string]*perNode{}
	node := func(n string) *perNode {
		if nodes[n] == nil {
			nodes[n] = &perNode{}
		}
		return nodes[n]
	}
	var clock int64 // latest harness/resource time recorded so far: a lower bound of "now"
	anyElected, anyWrite := false, false
	for _, e := range evs {
		switch e.Source {
		case history.SourceCandidate:
			n := node(e.Node)
			if !e.Stamped && clock-e.T > int64(opts.LateAfter) {
				l.add("late-events", "R1", e.Node,
					fmt.Sprintf("a %s event of %s reached the harness at least %v after its own t: stdout is buffered", e.Kind, e.Node, time.Duration(clock-e.T).Round(time.Millisecond)),
					"flush stdout after every line (Python: print(..., flush=True) or sys.stdout.flush(); C: setvbuf(stdout, NULL, _IOLBF, 0))", "")
			}
			switch e.Kind {
			case history.KindCampaigning:
				n.campaigned = true
			case history.KindElected:
				anyElected = true
				if !n.campaigned {
					l.add("no-campaigning", "R9", e.Node, e.Node+` printed "elected" without a "campaigning" event before it`,
						`print {"kind":"campaigning"} when a campaign starts, before the first store call`, "")
				}
				if n.sigtermAt != 0 {
					l.add("elected-after-sigterm", "R10", e.Node, e.Node+` printed "elected" after it got SIGTERM`,
						"on SIGTERM stop campaigning; a lock won after the signal is given back without printing elected", "")
				}
				n.elected, n.leading = true, true
			case history.KindSteppedDown:
				n.leading = false
				if n.sigtermAt != 0 {
					n.steppedSinceSigterm = true
				}
			case history.KindWrite:
				n.wrote, anyWrite = true, true
			}
		case history.SourceHarness, history.SourceResource:
			if e.T > clock {
				clock = e.T
			}
			if e.Source == history.SourceResource {
				continue
			}
			switch e.Kind {
			case history.KindSignal:
				if e.Signal == "SIGTERM" {
					n := node(e.Node)
					n.sigtermAt, n.sigtermSeq, n.leadingAtSigterm, n.steppedSinceSigterm = e.T, e.Seq, n.leading, false
					n.campaignedAtSigterm = n.campaigned
				}
			case history.KindProcessExit:
				n := node(e.Node)
				if e.Exit != nil && *e.Exit == 64 {
					l.exit64[e.Node] = true
				}
				if n.sigtermAt != 0 {
					took := time.Duration(e.T - n.sigtermAt)
					switch {
					case took > opts.StopGrace:
						l.add("ignores-sigterm", "R11", e.Node, fmt.Sprintf("%s exited %v after SIGTERM (the harness kills after %v)", e.Node, took.Round(time.Millisecond), opts.StopGrace),
							"install a SIGTERM handler (the candidate is PID 1: without one the signal is ignored), step down, resign and exit", "")
					case e.Exit != nil && *e.Exit != 0 && n.campaignedAtSigterm:
						// Only a process that had campaigned since its start: one signalled
						// while it starts (a handoff's restart meeting the teardown) may not
						// have installed its handler yet, and then the signal's default
						// action decides its exit code (a Go program as PID 1 exits 2).
						l.add("sigterm-exit-code", "R11", e.Node, fmt.Sprintf("%s exited with code %d after SIGTERM", e.Node, *e.Exit),
							"exit 0 after resigning on SIGTERM", "")
					}
					if n.leadingAtSigterm && !n.steppedSinceSigterm {
						l.add("no-step-down-on-sigterm", "R9", e.Node, e.Node+` led when it got SIGTERM and exited without printing "stepped-down"`,
							`print {"kind":"stepped-down","reason":"sigterm"} before resigning`, "")
					}
				}
				n.sigtermAt, n.leading = 0, false
			case history.KindProcessStart:
				n := node(e.Node)
				n.sigtermAt, n.leading, n.campaigned = 0, false, false
			}
		}
	}
	for name, n := range nodes {
		if n.sigtermAt != 0 {
			l.add("ignores-sigterm", "R11", name, name+" never exited after SIGTERM",
				"install a SIGTERM handler (the candidate is PID 1: without one the signal is ignored), step down, resign and exit", "")
		}
		if !n.campaigned && !n.elected && len(evs) > 0 {
			l.add("silent", "R9", name, name+" printed no valid event",
				`print one JSON object per line on stdout, starting with {"kind":"campaigning"}; its log is logs/`+name+`.log`, "")
		}
	}
	if !anyElected {
		l.add("never-elected", "R8", "", "no candidate was ever elected",
			`when a campaign succeeds print {"kind":"elected","token":N}; look at the candidates' logs for store errors`, "")
	} else if !anyWrite {
		l.add("never-writes", "R6", "", "candidates were elected but no write was reported",
			`a leader writes every SPLITBRAIN_WRITE_INTERVAL and prints a "write" event for each (section 3)`, "")
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Format renders problems for a terminal, one block per problem.
func Format(ps []Problem) string {
	if len(ps) == 0 {
		return "no contract problems found\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d contract problem(s):\n", len(ps))
	for _, p := range ps {
		where := ""
		if len(p.Nodes) > 0 {
			where = " on " + strings.Join(p.Nodes, ", ")
		}
		fmt.Fprintf(&b, "\n[%s] %s (%d×%s)\n  what: %s\n  fix:  %s\n", p.Rule, p.Code, p.Count, where, p.What, p.Fix)
		if p.Example != "" && p.Example != p.What {
			fmt.Fprintf(&b, "  line: %s\n", p.Example)
		}
	}
	b.WriteString("\nrules: docs/candidates.md (section 10 lists R1-R16)\n")
	return b.String()
}
