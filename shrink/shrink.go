// Package shrink replays recorded runs and shrinks the fault plan of a failing one: delta
// debugging over the concrete plan (drop faults, shorten them, shorten the phases, lower
// the node count), keeping a smaller case only when it still fails in at least one of K
// tries. The core (Shrink) sees runs through the Runner interface, so it is tested on fake
// runners; HarnessRunner runs real ones.
package shrink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// Case is what one try runs: the concrete plan and the lengths it is shrunk along.
type Case struct {
	Nodes    int           `json:"nodes"`
	Warmup   time.Duration `json:"warmup"`
	Recovery time.Duration `json:"recovery"`
	// Plan.FaultPhase is the faults phase; Plan.Topology.Candidates follows Nodes.
	Plan nemesis.Plan `json:"plan"`
}

// FaultPhase is the length of the case's faults phase.
func (c Case) FaultPhase() time.Duration { return time.Duration(c.Plan.FaultPhase) }

// Length is the planned run time (setup and teardown excluded).
func (c Case) Length() time.Duration { return c.Warmup + c.FaultPhase() + c.Recovery }

// Size is what shrinking reduces. A case is smaller than another when no part is larger
// and one is smaller: every accepted step shrinks, which is why the search ends.
type Size struct {
	Faults    int           `json:"faults"`     // planned faults plus triggered ones
	FaultTime time.Duration `json:"fault_time"` // sum of the faults' durations (triggered ones included)
	// Delay is the sum of the triggered faults' after= (a chain whose faults follow their
	// events sooner is smaller).
	Delay   time.Duration `json:"delay,omitempty"`
	RunTime time.Duration `json:"run_time"` // warmup + faults phase + recovery
	Nodes   int           `json:"nodes"`
}

func (c Case) Size() Size {
	s := Size{Faults: len(c.Plan.Faults) + len(c.Plan.Triggers), RunTime: c.Length(), Nodes: c.Nodes}
	for _, f := range c.Plan.Faults {
		s.FaultTime += time.Duration(f.For)
	}
	for _, t := range c.Plan.Triggers {
		s.FaultTime += time.Duration(t.Fault.For)
		s.Delay += time.Duration(t.After)
	}
	return s
}

// Less reports whether s is strictly smaller than o (no part larger, one part smaller).
func (s Size) Less(o Size) bool {
	if s.Faults > o.Faults || s.FaultTime > o.FaultTime || s.RunTime > o.RunTime || s.Nodes > o.Nodes || s.Delay > o.Delay {
		return false
	}
	return s != o
}

func (s Size) String() string {
	out := fmt.Sprintf("%d faults (%v of faults), %v run, %d nodes", s.Faults, s.FaultTime, s.RunTime, s.Nodes)
	if s.Delay > 0 {
		out += fmt.Sprintf(", %v of trigger delays", s.Delay)
	}
	return out
}

// Outcome is one try's result.
type Outcome struct {
	Failed  bool          `json:"failed"` // the failure being shrunk reproduced
	Verdict string        `json:"verdict"`
	Codes   []string      `json:"codes,omitempty"`
	RunDir  string        `json:"run_dir,omitempty"`
	Elapsed time.Duration `json:"elapsed"`
	// Err is set when the try could not run (a harness error): neither a pass nor a failure.
	Err string `json:"error,omitempty"`
}

// Runner runs one try of a case. An error means the try could not run (it is not a pass and
// not a failure); ctx carries the budget's deadline.
type Runner interface {
	Run(ctx context.Context, c Case) (Outcome, error)
}

// Limits of the shrinking moves: below them a run cannot show anything.
type Limits struct {
	MinNodes    int           // fewest candidates (2: an election needs a rival)
	MinWarmup   time.Duration // the first leader must be elected before the faults
	MinRecovery time.Duration // time for the heal to show
	MinFault    time.Duration // shortest fault worth trying
	// AfterLastFault is the least the faults phase keeps after its last fault ends. A run
	// whose phase ends on events (--until) needs its settle and a leader's writes there, or
	// every try of a correct candidate is unknown (goal-not-met) and proves nothing; 0 keeps
	// MinFault, for runs whose phase is a time table.
	AfterLastFault time.Duration
	// HealLag is, per fault kind, how much later than its planned end a fault of that kind
	// really healed in the recorded run (a crashed node's restart); the phase keeps it too.
	HealLag map[string]time.Duration
}

func (l Limits) zero() bool {
	return l.MinNodes == 0 && l.MinWarmup == 0 && l.MinRecovery == 0 && l.MinFault == 0 && l.AfterLastFault == 0 && l.HealLag == nil
}

// DefaultLimits suit the harness's runs.
var DefaultLimits = Limits{MinNodes: 2, MinWarmup: 3 * time.Second, MinRecovery: 2 * time.Second, MinFault: 200 * time.Millisecond}

// Options control a shrink.
type Options struct {
	Tries  int           // tries per candidate case; kept if at least one fails (default 1)
	Budget time.Duration // wall time for the whole shrink; 0 = none
	Limits Limits        // zero = DefaultLimits
	// Suspects are fault kinds whose drops are tried before any other move (Recorded.Suspects:
	// the kinds the failure's cause class rests on). Whether a clock-step find still fails
	// without its clock step decides whether it is the candidate's own bug, and at a 2-minute
	// budget the first moves are often the only ones tried (issue 48: four searches reported
	// one bug twice, the clock step still in the shrunk line).
	Suspects []string
	// Now is the clock (tests use a fake one); nil = time.Now.
	Now func() time.Time
	// Trying is called before each try (progress); Step after every candidate case, kept
	// or not (log, progress).
	Trying func(step int, move string, size Size, try int)
	Step   func(Step)
}

// Step records one candidate case and its tries.
type Step struct {
	N       int           `json:"step"`
	Move    string        `json:"move"`
	Size    Size          `json:"size"` // the candidate's size
	Tries   []Outcome     `json:"tries"`
	Kept    bool          `json:"kept"`
	Current Size          `json:"current"` // the current minimum after this step
	Elapsed time.Duration `json:"elapsed"`
	Budget  time.Duration `json:"budget,omitempty"`
	Error   string        `json:"error,omitempty"`
}

// Stop reasons.
const (
	StopMinimum   = "local minimum" // no move of the current case failed
	StopBudget    = "budget"        // the next try would not fit in the budget
	StopCancelled = "cancelled"
)

// Result is the outcome of a shrink.
type Result struct {
	Start, Minimal Case
	Steps          int
	Tries          int
	Kept           int
	Elapsed        time.Duration
	Stopped        string
	// LastFailure is the last try that failed with the minimal case (its run directory is
	// the exact replay of the minimal case); empty if the start case was never tried.
	LastFailure Outcome
}

// Shrink searches for a smaller case that still fails, starting from start (which failed
// already). Each round tries the moves of the current case from the biggest cut to the
// smallest and restarts from the first one that fails; it ends when a whole round fails
// nothing (a local minimum), on the budget or on cancellation.
func Shrink(ctx context.Context, r Runner, start Case, opt Options) (Result, error) {
	if opt.Tries <= 0 {
		opt.Tries = 1
	}
	if opt.Limits.zero() {
		opt.Limits = DefaultLimits
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	begin := now()
	res := Result{Start: start, Minimal: start}
	var deadline time.Time
	if opt.Budget > 0 {
		deadline = begin.Add(opt.Budget)
		// Also on the real clock, so a try that overruns is cancelled.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opt.Budget, errBudget)
		defer cancel()
	}
	stopped := func() string {
		if context.Cause(ctx) == errBudget || (!deadline.IsZero() && !now().Before(deadline)) {
			return StopBudget
		}
		return StopCancelled
	}
	tried := map[string]bool{key(start): true}
	// A fault whose removal did not fail is needed; it stays needed in smaller cases
	// (assumed, as delta debugging does), so dropping it is not tried again.
	needed := map[string]bool{}
	var overhead time.Duration // the most a try took beyond its planned length
	cur := start
	for {
		kept := false
		for _, m := range moves(cur, opt.Limits, opt.Suspects) {
			if !m.c.Size().Less(cur.Size()) || tried[key(m.c)] || needed[m.name] {
				continue
			}
			tried[key(m.c)] = true
			if ctx.Err() != nil {
				res.Stopped = stopped()
				res.Elapsed = now().Sub(begin)
				return res, nil
			}
			// A try that cannot finish within the budget is not started.
			if !deadline.IsZero() && now().Add(time.Duration(opt.Tries)*(m.c.Length()+overhead)).After(deadline) {
				res.Stopped = StopBudget
				res.Elapsed = now().Sub(begin)
				return res, nil
			}
			res.Steps++
			st := Step{N: res.Steps, Move: m.name, Size: m.c.Size(), Budget: opt.Budget}
			var failing *Outcome
			for i := 0; i < opt.Tries && failing == nil; i++ {
				if opt.Trying != nil {
					opt.Trying(st.N, m.name, st.Size, i+1)
				}
				t0 := now()
				out, err := r.Run(ctx, m.c)
				res.Tries++
				if d := now().Sub(t0) - m.c.Length(); d > overhead {
					overhead = d
				}
				if err != nil {
					st.Error = err.Error()
					if ctx.Err() != nil {
						break
					}
					continue
				}
				st.Tries = append(st.Tries, out)
				if out.Failed {
					failing = &out
				}
			}
			if failing != nil {
				cur, kept = m.c, true
				res.Minimal, res.LastFailure = cur, *failing
				res.Kept++
			}
			st.Kept = failing != nil
			if failing == nil && st.Error == "" && strings.HasPrefix(m.name, "drop fault ") {
				needed[m.name] = true
			}
			st.Current = cur.Size()
			st.Elapsed = now().Sub(begin)
			if opt.Step != nil {
				opt.Step(st)
			}
			if kept {
				break
			}
		}
		if !kept {
			res.Stopped = StopMinimum
			if ctx.Err() != nil {
				res.Stopped = stopped()
			}
			res.Elapsed = now().Sub(begin)
			return res, nil
		}
	}
}

type move struct {
	name string
	c    Case
}

// moves lists the smaller neighbours of c, the faults first, since which faults the bug
// needs is what a reader wants from a shrink: drop planned faults (halves, then one at a
// time) and triggered links, shorten them, then shorten the phases, lower the node count.
// With the phases first, the budget went on warmup and recovery and no fault was ever
// removed (12 of 13 explore finds, issue 48).
// The drops that remove only faults of a suspect kind go first, in their own order.
func moves(c Case, lim Limits, suspects []string) []move {
	faults, phases := faultMoves(c, lim), phaseMoves(c, lim)
	// A case whose links can never fire is not tried: it cannot fail, so its tries only
	// spend the budget (issue 48: dropping a chain's first link left two on=fault-start links
	// waiting on each other, both tries came out unknown, nothing-faulted, and a 90 s shrink
	// ended there).
	all := slices.DeleteFunc(slices.Concat(faults, phases), func(m move) bool { return stalled(m.c) })
	if len(suspects) == 0 {
		return all
	}
	have := faultKinds(c)
	first := func(m move) bool {
		if !strings.HasPrefix(m.name, "drop fault ") {
			return false
		}
		left := faultKinds(m.c)
		dropped := false
		for kind, n := range have {
			if left[kind] == n {
				continue
			}
			if !slices.Contains(suspects, kind) {
				return false
			}
			dropped = true
		}
		return dropped
	}
	slices.SortStableFunc(all, func(a, b move) int {
		fa, fb := first(a), first(b)
		switch {
		case fa && !fb:
			return -1
		case fb && !fa:
			return 1
		}
		return 0
	})
	return all
}

// faultKinds counts c's faults, planned and triggered, by kind.
func faultKinds(c Case) map[string]int {
	n := map[string]int{}
	for _, f := range c.Plan.Faults {
		n[f.Kind]++
	}
	for _, t := range c.Plan.Triggers {
		n[t.Fault.Kind]++
	}
	return n
}

// stalled reports whether c's triggered links can never fire: links chained on other
// faults (on=fault-start, on=fault-end) and nothing else, neither a planned fault nor a
// link on a candidate's event, to start the first of them.
func stalled(c Case) bool {
	if len(c.Plan.Faults) > 0 {
		return false
	}
	chained := 0
	for _, t := range c.Plan.Triggers {
		if !onFault(t) {
			return false
		}
		chained++
	}
	return chained > 0
}

// onFault says the link fires on another fault's start or end, not on a candidate's event.
func onFault(t nemesis.PlannedTrigger) bool {
	ev, _, _ := strings.Cut(t.On, ":")
	return ev == "fault-start" || ev == "fault-end"
}

// faultMoves drops and shortens faults: planned ones and triggered links.
func faultMoves(c Case, lim Limits) []move {
	var out []move
	fs := c.Plan.Faults
	// Drop faults, ddmin-style: chunks of n/2, n/4, ..., 1.
	for chunk := len(fs) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i < len(fs); i += chunk {
			j := min(i+chunk, len(fs))
			if j-i == len(fs) {
				continue
			}
			ids := make([]string, 0, j-i)
			for _, f := range fs[i:j] {
				ids = append(ids, strconv.Itoa(f.ID))
			}
			out = append(out, move{"drop fault " + joinIDs(ids), c.withFaults(slices.Concat(fs[:i], fs[j:]))})
		}
		if chunk == 1 {
			break
		}
	}
	if len(fs) == 1 {
		// Dropping the last fault is allowed too: a failure without faults is a finding.
		out = append(out, move{"drop fault " + strconv.Itoa(fs[0].ID), c.withFaults(nil)})
	}
	drops, sooner, shorter := triggerMoves(c, lim)
	out = append(out, drops...)
	for i, f := range fs {
		if d := half(time.Duration(f.For), lim.MinFault); d < time.Duration(f.For) {
			n := c.clone()
			n.Plan.Faults[i].For = nemesis.Duration(d)
			out = append(out, move{fmt.Sprintf("fault %d for %v → %v", f.ID, time.Duration(f.For), d), n})
		}
	}
	return slices.Concat(out, sooner, shorter)
}

// phaseMoves shortens the phases (which also makes every later try quicker) and lowers the
// node count.
func phaseMoves(c Case, lim Limits) []move {
	var out []move
	fs := c.Plan.Faults
	// End the faults phase with the last fault (and what the run's goal needs after it).
	var lastEnd time.Duration
	for _, f := range fs {
		lastEnd = max(lastEnd, time.Duration(f.At+f.For)+lim.HealLag[f.Kind])
	}
	// Not with triggers: when they fire is up to the run, so the phase must keep its room.
	if phase := max(lastEnd+lim.AfterLastFault, lim.MinFault); phase < c.FaultPhase() && len(c.Plan.Triggers) == 0 {
		n := c.clone()
		n.Plan.FaultPhase = nemesis.Duration(phase)
		out = append(out, move{fmt.Sprintf("faults phase %v → %v", c.FaultPhase(), phase), n})
	}
	// Start the faults earlier (halve the quiet stretch before the first one).
	if len(fs) > 0 {
		first := time.Duration(fs[0].At)
		for _, f := range fs {
			first = min(first, time.Duration(f.At))
		}
		if shift := (first / 2).Round(time.Millisecond); shift >= 100*time.Millisecond {
			n := c.clone()
			for i := range n.Plan.Faults {
				n.Plan.Faults[i].At -= nemesis.Duration(shift)
			}
			n.Plan.FaultPhase -= nemesis.Duration(shift)
			out = append(out, move{fmt.Sprintf("faults %v earlier", shift), n})
		}
	}
	if w := half(c.Warmup, lim.MinWarmup); w < c.Warmup {
		n := c.clone()
		n.Warmup = w
		out = append(out, move{fmt.Sprintf("warmup %v → %v", c.Warmup, w), n})
	}
	if rc := half(c.Recovery, lim.MinRecovery); rc < c.Recovery {
		n := c.clone()
		n.Recovery = rc
		out = append(out, move{fmt.Sprintf("recovery %v → %v", c.Recovery, rc), n})
	}
	// Fewer candidates, when no fault names the last one.
	if c.Nodes > lim.MinNodes && !mentions(fs, candidateName(c.Nodes)) && !mentions(triggerFaults(c.Plan.Triggers), candidateName(c.Nodes)) {
		n := c.clone()
		n.Nodes--
		n.Plan.Topology.Candidates = slices.DeleteFunc(slices.Clone(n.Plan.Topology.Candidates),
			func(s string) bool { return s == candidateName(c.Nodes) })
		out = append(out, move{fmt.Sprintf("nodes %d → %d", c.Nodes, n.Nodes), n})
	}
	return out
}

// triggerMoves shrinks the causal chain of triggered faults: drop a link (the faults
// chained on it then follow the one before), start a link sooner after its event, hold it
// shorter. A trigger is named by its event and spec, which do not change as others go.
func triggerMoves(c Case, lim Limits) (drops, sooner, shorter []move) {
	// The links are dropped from the last to the first: a guided chain opens with the fault
	// it was built around (on the leader's writes) and the links chained on it come after,
	// so the later ones are the likelier to be unneeded.
	for i := len(c.Plan.Triggers) - 1; i >= 0; i-- {
		t := c.Plan.Triggers[i]
		name := fmt.Sprintf("%s on=%s", t.Fault.Kind, t.On)
		if len(c.Plan.Faults)+len(c.Plan.Triggers) > 1 || len(c.Plan.Triggers) == 1 {
			n := c.clone()
			n.Plan.Triggers = slices.Delete(n.Plan.Triggers, i, i+1)
			move := move{"drop fault " + name + " (" + t.Fault.Spec + ")", n}
			// Dropping the link that opens a chain leaves the links chained on it waiting
			// for a fault that never comes (stalled); the first of them then takes over
			// its event, so the bug's need of the opener can be tried (issue 48: a
			// clock-step find's clock opened the chain and stayed in every shrunk line).
			if stalled(n) && !onFault(t) {
				if j := slices.IndexFunc(n.Plan.Triggers, onFault); j >= 0 {
					if next, err := n.Plan.Triggers[j].WithOn(t.On); err == nil {
						next.Every += t.After - next.After // its cooldown's excess over its delay stays
						next.After, next.Count = t.After, t.Count
						n.Plan.Triggers[j] = next
						move.name += fmt.Sprintf(", %s now on=%s", next.Fault.Kind, t.On)
					}
				}
			}
			drops = append(drops, move)
		}
		if a := time.Duration(t.After); a > 0 {
			next := (a / 2).Round(time.Millisecond)
			if next < 10*time.Millisecond {
				next = 0
			}
			n := c.clone()
			n.Plan.Triggers[i].After = nemesis.Duration(next)
			n.Plan.Triggers[i].Every = n.Plan.Triggers[i].Every - nemesis.Duration(a-next)
			sooner = append(sooner, move{fmt.Sprintf("%s after %v → %v", name, a, next), n})
		}
		if d := half(time.Duration(t.Fault.For), lim.MinFault); d < time.Duration(t.Fault.For) {
			n := c.clone()
			n.Plan.Triggers[i].Fault.For = nemesis.Duration(d)
			n.Plan.Triggers[i].Every = n.Plan.Triggers[i].Every - (t.Fault.For - nemesis.Duration(d))
			shorter = append(shorter, move{fmt.Sprintf("%s for %v → %v", name, time.Duration(t.Fault.For), d), n})
		}
	}
	return drops, sooner, shorter
}

func triggerFaults(ts []nemesis.PlannedTrigger) []nemesis.PlannedFault {
	var out []nemesis.PlannedFault
	for _, t := range ts {
		out = append(out, t.Fault)
	}
	return out
}

// half halves d to whole milliseconds, not below floor (d itself if it is already there).
func half(d, floor time.Duration) time.Duration {
	h := (d / 2).Round(time.Millisecond)
	if h < floor {
		h = floor
	}
	return min(h, d)
}

func (c Case) clone() Case {
	n := c
	n.Plan.Faults = slices.Clone(c.Plan.Faults)
	n.Plan.Triggers = slices.Clone(c.Plan.Triggers)
	return n
}

func (c Case) withFaults(fs []nemesis.PlannedFault) Case {
	n := c
	n.Plan.Faults = slices.Clone(fs)
	n.Plan.Triggers = slices.Clone(c.Plan.Triggers)
	if n.Plan.Faults == nil {
		n.Plan.Faults = []nemesis.PlannedFault{}
	}
	return n
}

// mentions reports whether any fault names node, in any field (targets, chosen nodes,
// grudges and whatever the nemesis adds later).
func mentions(fs []nemesis.PlannedFault, node string) bool {
	quoted := strconv.Quote(node)
	for _, f := range fs {
		b, err := json.Marshal(f)
		if err != nil || strings.Contains(string(b), quoted) || strings.Contains(string(b), "node:"+node+`"`) {
			return true
		}
	}
	return false
}

func candidateName(i int) string { return "c" + strconv.Itoa(i) }

func joinIDs(ids []string) string {
	if len(ids) == 1 {
		return ids[0]
	}
	return ids[0] + "–" + ids[len(ids)-1]
}

// key identifies a case so no case is tried twice.
func key(c Case) string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // a Case always encodes
	}
	return string(b)
}

var errBudget = errors.New("shrink budget used up")

// ErrNotFailing is returned when the run to shrink did not fail.
var ErrNotFailing = errors.New("the run is not invalid: only a failing run can be shrunk")
