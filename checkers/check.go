package checkers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

// SchemaVersion of results.json (docs/results.md).
const SchemaVersion = 1

// ResultsFile is the name of the results file in a run directory.
const ResultsFile = runfile.ResultsFile

// RunInfo summarises the history itself.
type RunInfo struct {
	StartT     int64          `json:"start_t"` // run-start (or first event), CLOCK_MONOTONIC ns; all other t are on this clock
	EndT       int64          `json:"end_t"`   // run-end (or last event)
	HealT      int64          `json:"heal_t,omitempty"`
	TeardownT  int64          `json:"teardown_t,omitempty"`
	Events     int            `json:"events"`
	ByKind     map[string]int `json:"events_by_kind"`
	Candidates []string       `json:"candidates"`
	Phases     []PhaseMark    `json:"phases"`
}

// PhaseMark is the start of a lifecycle phase.
type PhaseMark struct {
	Phase string `json:"phase"`
	T     int64  `json:"t"`
}

// Results is everything a report needs; written as results.json. A field whose pointer is a
// section is a checker's section: its JSON key is the checker's name and the field order is
// the report order (checkerList is derived from these fields).
type Results struct {
	Schema    int             `json:"schema"`
	Verdict   Verdict         `json:"verdict"`
	Reasons   []Reason        `json:"reasons"`  // what made the verdict (severity invalid or unknown)
	Findings  []Reason        `json:"findings"` // reported but verdict-neutral
	Params    Params          `json:"params"`
	BoundNs   int64           `json:"failover_bound_ns"`
	Run       RunInfo         `json:"run"`
	Faults    []FaultWindow   `json:"faults"`
	Tenures   TenureResult    `json:"tenures"`
	Resource  ResourceResult  `json:"resource"`
	Tokens    TokenResult     `json:"tokens"`
	Porcupine PorcupineResult `json:"porcupine"`
	Latency   LatencyResult   `json:"latency"`
	Contract  ContractResult  `json:"contract"`
	Fences    FenceResult     `json:"fences"`
	Validity  ValidityResult  `json:"validity"`
	// LateWrites places an invalid run's flagged writes against the next leader's election
	// (late.go); nil for any other verdict.
	LateWrites *LateWrites `json:"late_writes,omitempty"`
	// Cause classes an invalid run by what it rested on besides the candidate (cause.go);
	// nil for any other verdict.
	Cause   *Cause `json:"cause,omitempty"`
	CheckNs int64  `json:"check_duration_ns"`
}

// section is a checker's part of Results, implemented by its result type's pointer in the
// checker's file (Jepsen's compose map: the key is the section's JSON name). Adding a
// checker is that file plus its field in Results.
type section interface {
	// reset sets the section to what it reads as before (or without) a check: every list
	// non-nil, so a section whose checker crashed still reads as JSON arrays.
	reset()
	// check judges the analysed history, fills the section and adds its reasons.
	check(ctx context.Context, a *analysis, rl *reasonList)
}

// checker is one property judged over the analysed history: it fills its section of the
// results and adds its reasons.
type checker interface {
	Name() string
	Check(ctx context.Context, a *analysis, r *Results, rl *reasonList)
}

// checkerFunc adapts a function to the checker interface.
type checkerFunc struct {
	name string
	fn   func(ctx context.Context, a *analysis, r *Results, rl *reasonList)
}

func (c checkerFunc) Name() string { return c.name }
func (c checkerFunc) Check(ctx context.Context, a *analysis, r *Results, rl *reasonList) {
	c.fn(ctx, a, r, rl)
}

// sectionField is the checker of one section field of Results.
type sectionField struct {
	name  string
	index int
}

func (c sectionField) Name() string { return c.name }
func (c sectionField) Check(ctx context.Context, a *analysis, r *Results, rl *reasonList) {
	sectionAt(r, c.index).check(ctx, a, rl)
}

func sectionAt(r *Results, index int) section {
	return reflect.ValueOf(r).Elem().Field(index).Addr().Interface().(section)
}

// checkerList is every checker, in report order: the section fields of Results. Names, the
// report's checker table and JUnit follow it.
var checkerList = sectionFields()

func sectionFields() []checker {
	var out []checker
	rt := reflect.TypeFor[Results]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		if _, ok := reflect.New(f.Type).Interface().(section); ok {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out = append(out, sectionField{name: name, index: i})
		}
	}
	return out
}

// Names lists the checkers in report order: the report sections and JUnit test cases.
func Names() []string {
	out := make([]string, len(checkerList))
	for i, c := range checkerList {
		out[i] = c.Name()
	}
	return out
}

// Check runs every checker over a run's events (in seq order, as history.Read returns them)
// and folds their reasons into a verdict. The verdict is a function of the events and p
// alone: run and check agree. It returns an error only for unusable Params.
func Check(ctx context.Context, events []history.Event, p Params) (*Results, error) {
	return checkWith(ctx, checkerList, events, p)
}

func checkWith(ctx context.Context, list []checker, events []history.Event, p Params) (*Results, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	var rl reasonList
	r := emptyResults(p)
	a, ok := safeAnalyse(events, p, &rl)
	if ok {
		r.Faults = append(r.Faults, a.faults...)
		for _, c := range list {
			runSafe(ctx, c, a, r, &rl)
		}
		r.Run = runInfo(a)
	}
	r.Reasons, r.Findings = []Reason{}, []Reason{}
	for _, x := range rl.done() {
		if x.Severity == SevFinding {
			r.Findings = append(r.Findings, x)
		} else {
			r.Reasons = append(r.Reasons, x)
		}
	}
	r.Verdict = verdictOf(r.Reasons)
	if r.Verdict == Invalid && ok {
		l := AttributeLateWrites(r, events)
		r.LateWrites = &l
		c := AttributeCause(r)
		r.Cause = &c
	}
	r.CheckNs = time.Since(t0).Nanoseconds()
	return r, nil
}

// emptyResults has every list non-nil, so a section whose checker failed still reads as JSON arrays.
func emptyResults(p Params) *Results {
	r := &Results{Schema: SchemaVersion, Params: p, BoundNs: p.FailoverBound().Nanoseconds(), Faults: []FaultWindow{},
		Run: RunInfo{ByKind: map[string]int{}, Candidates: []string{}, Phases: []PhaseMark{}},
	}
	for _, c := range sectionFields() {
		sectionAt(r, c.(sectionField).index).reset()
	}
	return r
}

// runSafe runs one checker; a panic becomes an unknown reason naming it (Jepsen's
// check-safe) and the other checkers still run.
func runSafe(ctx context.Context, c checker, a *analysis, r *Results, rl *reasonList) {
	defer func() {
		if v := recover(); v != nil {
			rl.add(Reason{Checker: c.Name(), Code: "checker-panic", Severity: SevUnknown,
				Message: fmt.Sprintf("checker %s crashed, so what it checks is not known: %v", c.Name(), v)})
		}
	}()
	c.Check(ctx, a, r, rl)
}

// safeAnalyse indexes the history; a panic there leaves nothing to check.
func safeAnalyse(events []history.Event, p Params, rl *reasonList) (a *analysis, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			rl.add(Reason{Checker: "validity", Code: "checker-panic", Severity: SevUnknown,
				Message: fmt.Sprintf("indexing the history crashed, so nothing was checked: %v", v)})
			a, ok = nil, false
		}
	}()
	return analyse(events, p), true
}

func runInfo(a *analysis) RunInfo {
	ri := RunInfo{StartT: a.startT, EndT: a.endT, HealT: a.healT, TeardownT: a.teardownT, Events: len(a.ev),
		ByKind: map[string]int{}, Candidates: a.candidates, Phases: []PhaseMark{}}
	if ri.Candidates == nil {
		ri.Candidates = []string{}
	}
	for i := range a.ev {
		ri.ByKind[string(a.ev[i].Kind)]++
		if a.ev[i].Kind == history.KindPhase {
			ri.Phases = append(ri.Phases, PhaseMark{a.ev[i].Phase, a.ev[i].T})
		}
	}
	return ri
}

// ReadResults reads a results.json.
func ReadResults(path string) (*Results, error) {
	b, err := runfile.ReadFile(path, runfile.MaxJSON)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Schema != SchemaVersion {
		return nil, fmt.Errorf("%s: results schema %d, this splitbrain reads %d (re-run 'splitbrain check' on the run dir)", path, r.Schema, SchemaVersion)
	}
	return &r, nil
}

// Summary prints the verdict, its reasons and the main figures for a terminal.
func (r *Results) Summary(w io.Writer) {
	fmt.Fprintf(w, "verdict: %s\n", strings.ToUpper(string(r.Verdict)))
	for _, x := range r.Reasons {
		fmt.Fprintf(w, "  [%s] %s\n", x.Severity, x.Message)
	}
	if r.Verdict == Valid {
		fmt.Fprintln(w, "  no stale write accepted, no interleaving, tokens monotone, fenced register linearizable")
	}
	if len(r.Findings) > 0 {
		fmt.Fprintln(w, "findings (not part of the verdict):")
		for _, x := range r.Findings {
			fmt.Fprintf(w, "  - %s\n", x.Message)
		}
	}
	fmt.Fprintf(w, "elections %d, overlaps %d (max %s), writes accepted %d / rejected %d (stale rejected %d)\n",
		r.Tenures.Elections, r.Tenures.OverlapCount, fmtD(r.Tenures.OverlapMaxNs), r.Resource.Accepted, r.Resource.Rejected, r.Resource.StaleRejectedN)
	for _, k := range r.Latency.ByKind {
		fmt.Fprintf(w, "  %-10s faults %d failovers %d: election median %s p99 %s max %s; first write median %s\n",
			k.Kind, k.Faults, k.Failovers, fmtD(k.Election.MedianNs), fmtD(k.Election.P99Ns), fmtD(k.Election.MaxNs), fmtD(k.FirstWrite.MedianNs))
	}
	for _, m := range r.Porcupine.Models {
		viz := ""
		if m.Visualization != "" {
			viz = " → " + m.Visualization
		}
		fmt.Fprintf(w, "  porcupine %-16s %s (%d ops, %d partitions)%s\n", m.Model, m.Result, m.Ops, m.Partitions, viz)
	}
}
