package reports

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"path/filepath"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// templates are parsed once; html/template escapes every value for its context (text,
// attribute, URL), which is what keeps candidate output and log lines inert.
var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"dur":         fmtDur,
	"faultStyles": faultStyles,
	"lower":       strings.ToLower,
	"upper":       strings.ToUpper,
	"add":         func(a, b float64) float64 { return round1(a + b) },
	"sub":         func(a, b float64) float64 { return round1(a - b) },
	"gradeText":   scorecardGradeText,
	"fdur":        scorecardDur,
}).ParseFS(templateFS, "templates/*.tmpl"))

type fact struct {
	Key, Value string
	Mono       bool
}

type reasonView struct {
	Num      string
	MarkID   string
	Checker  string
	Code     string
	Severity string
	Message  string
	When     string
	T        int64
	Nodes    string
	Tokens   string
	WhyID    string // the explanation of this reason's code, when it is the first of it
}

// explainView is one explanation with its zoomed timeline.
type explainView struct {
	ID, Code, Severity string
	Nodes              string // the zoomed timeline's candidates
	FaultID            int
	Steps              []ExplainStep
	Zoom               *timeline
}

type statsView struct{ Count, Median, P99, Max string }

type kindRow struct {
	Kind                                    string
	Faults, Failovers, Kept, NoLeader       int
	Election, FirstWrite, Recovery, Unavail statsView
	OverBound                               bool
}

type row []string

// table is a capped list of rows with the number left out.
type table struct {
	Head []string
	Rows []row
	More int
	ID   string
}

type porcView struct {
	Model, Result, Meaning, Note string
	Ops, Partitions, MaxOps      int
	Duration                     string
	Viz                          string
	Class                        string
	Unlinearized                 []string
	FailWindow                   string
}

type reportView struct {
	Title, TestName, RunName string
	Verdict, VerdictText     string
	LateWrites               string // an invalid run's late writes, placed (checkers.LateWrites)
	Cause                    string // an invalid run's cause class and evidence (checkers.Cause)
	Explanations             []explainView
	Reasons, Findings        []reasonView
	Groups                   []reasonGroup // the reasons folded by code and tenure, listed first
	Checkers                 []checkerRow  // one per entry of the checkers' list, as in junit.xml
	Facts                    []fact
	Replay                   string
	Timeline                 *timeline
	Chart                    *latencyChart
	KindRows                 []kindRow
	Bound, Threshold         string
	InitialElection          string
	Summary                  []fact
	Overlaps                 table
	Tenures                  table
	StaleAccepted            table
	StaleRejected            table
	Interleavings            table
	ResourceBugs             table
	Disagreements            table
	TokenAnomalies           table
	Contract                 table
	Unavail                  table
	LivenessFailures         []reasonView
	LivenessOK               bool
	Stable                   string
	Porcupine                []porcView
	Logs                     []string
	Notes                    []string
	Generated                string
	Tokens                   checkers.TokenResult
	Resource                 checkers.ResourceResult
	TenureSum                checkers.TenureResult
	ContractN                int
}

// RenderRun (re)writes report.html and junit.xml in a run directory from its results.json,
// config.json and history.jsonl. The run lifecycle calls it after checking; `splitbrain
// report RUN_DIR` calls it for stored runs.
func RenderRun(runDir string) error {
	res, err := readResults(runDir)
	if err != nil {
		return err
	}
	cfg, err := readConfig(runDir)
	if err != nil {
		return err
	}
	h, err := readHistory(runDir)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	v := buildReport(runDir, res, cfg, h)
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, "report.html.tmpl", v); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	if err := writeAtomic(filepath.Join(runDir, ReportFile), buf.Bytes()); err != nil {
		return err
	}
	return WriteJUnit(runDir, res, cfg)
}

func buildReport(runDir string, r *checkers.Results, cfg *runConfig, h *rawHistory) *reportView {
	t0 := r.Run.StartT
	abs, _ := filepath.Abs(runDir)
	v := &reportView{
		TestName:  testName(abs, cfg, r),
		RunName:   filepath.Base(abs),
		Verdict:   string(r.Verdict),
		Replay:    cfg.Replay,
		Bound:     fmtDur(r.BoundNs),
		Threshold: fmtDur(r.Latency.ThresholdNs),
		Generated: time.Now().UTC().Format(time.RFC3339),
		Tokens:    r.Tokens, Resource: r.Resource, TenureSum: r.Tenures, ContractN: r.Contract.Count,
		LivenessOK: r.Latency.LivenessOK,
	}
	v.Title = fmt.Sprintf("%s — %s", strings.ToUpper(v.Verdict), v.TestName)
	switch r.Verdict {
	case checkers.Valid:
		v.VerdictText = "No stale write was accepted, no interleaving, tokens monotone, fenced register linearizable."
	case checkers.Invalid:
		v.VerdictText = "The safety criterion was violated."
	default:
		v.VerdictText = "The checkers could not decide: this is not a pass."
	}
	if r.LateWrites != nil {
		v.LateWrites = r.LateWrites.String()
	}
	if r.Cause != nil {
		v.Cause = r.Cause.String()
	}
	v.Reasons = reasonViews(r.Reasons, "r", t0)
	v.Findings = reasonViews(r.Findings, "f", t0)
	v.Checkers = checkerRows(r)
	v.LivenessFailures = reasonViews(r.Latency.LivenessFailures, "l", t0)

	v.Explanations = explainViews(r, cfg, h, v.Reasons)
	why := map[string]string{}
	for _, x := range v.Explanations {
		why[x.Code] = x.ID
	}
	v.Groups = groupReasons(r, v.Reasons, why)
	v.Facts = runFacts(r, cfg)
	v.Timeline = timelineWithMarks(r, cfg, h, v.Reasons, v.Findings)
	v.Chart = buildLatencyChart(r)
	v.latencySection(r)
	v.Summary = summaryFacts(r)
	v.checkerTables(r)
	v.Porcupine = porcupineViews(r)
	v.Logs = listLogs(runDir)
	v.Notes = reportNotes(v.Timeline, h)
	return v
}

// timelineWithMarks is the run's timeline with an anchor line for every timed reason and
// finding.
func timelineWithMarks(r *checkers.Results, cfg *runConfig, h *rawHistory, reasons, findings []reasonView) *timeline {
	tl := buildTimeline(r, cfg, h)
	sc := fullView(r).scale()
	tl.addMarks(reasons, sc)
	tl.addMarks(findings, sc)
	return tl
}

// latencySection: per fault kind failover statistics and the stable leader after the heal.
func (v *reportView) latencySection(r *checkers.Results) {
	t0 := r.Run.StartT
	for _, k := range r.Latency.ByKind {
		v.KindRows = append(v.KindRows, kindRow{Kind: k.Kind, Faults: k.Faults, Failovers: k.Failovers, Kept: k.LeaderKept, NoLeader: k.NoLeader,
			Election: sv(k.Election), FirstWrite: sv(k.FirstWrite), Recovery: sv(k.Recovery), Unavail: sv(k.Unavailability),
			OverBound: r.BoundNs > 0 && (k.Election.MaxNs > r.BoundNs || k.FirstWrite.MaxNs > r.BoundNs)})
	}
	v.InitialElection = fmtDur(r.Latency.InitialElectionNs)
	st := r.Latency.Stable
	if st.Found {
		v.Stable = fmt.Sprintf("%s (token %d) led stably %s after the heal at %s; its first accepted write came %s after the heal.",
			st.Node, st.Token, fmtDur(st.StableNs), rel(st.HealT, t0), fmtDur(st.FirstWriteNs))
	} else {
		v.Stable = fmt.Sprintf("No single stable leader after the heal at %s (%d believed they led at the end).", rel(st.HealT, t0), st.Leaders)
	}
}

// summaryFacts are the headline counts under the run facts.
func summaryFacts(r *checkers.Results) []fact {
	return []fact{
		{Key: "elections", Value: fmt.Sprint(r.Tenures.Elections)},
		{Key: "split-brain windows", Value: fmt.Sprintf("%d (total %s, longest %s)", r.Tenures.OverlapCount, fmtDur(r.Tenures.OverlapSumNs), fmtDur(r.Tenures.OverlapMaxNs))},
		{Key: "writes accepted / rejected", Value: fmt.Sprintf("%d / %d", r.Resource.Accepted, r.Resource.Rejected)},
		{Key: "stale accepted / rejected", Value: fmt.Sprintf("%d / %d", r.Resource.StaleAcceptedN, r.Resource.StaleRejectedN)},
		{Key: "token anomalies", Value: fmt.Sprint(len(r.Tokens.Anomalies))},
		{Key: "contract violations", Value: fmt.Sprint(r.Contract.Count)},
		{Key: "unavailability", Value: fmt.Sprintf("%d windows (total %s, longest %s)", r.Latency.UnavailableCount, fmtDur(r.Latency.UnavailableSumNs), fmtDur(r.Latency.UnavailableMaxNs))},
	}

}

// checkerTables fills the checker sections' tables (each capped at maxTableRows).
func (v *reportView) checkerTables(r *checkers.Results) {
	t0 := r.Run.StartT
	v.Overlaps = table{ID: "overlaps", Head: []string{"#", "start", "end", "length", "leaders", "who (token)"}}
	for i, o := range r.Tenures.Overlaps {
		var who []string
		for _, m := range o.Members {
			who = append(who, fmt.Sprintf("%s (%d)", m.Node, m.Token))
		}
		v.Overlaps.add(row{fmt.Sprint(i + 1), rel(o.StartT, t0), rel(o.EndT, t0), fmtDur(o.Duration), fmt.Sprint(o.MaxCount), strings.Join(who, ", ")})
	}
	v.Tenures = table{ID: "tenures", Head: []string{"#", "node", "token", "elected", "ended", "length", "end reason", "accepted", "rejected"}}
	for _, t := range r.Tenures.Tenures {
		end := t.EndReason
		if t.Open {
			end += " (open)"
		}
		v.Tenures.add(row{fmt.Sprint(t.ID), t.Node, fmt.Sprint(t.Token), rel(t.StartT, t0), rel(t.EndT, t0), fmtDur(t.EndT - t.StartT), end,
			fmt.Sprint(t.Accepted), fmt.Sprint(t.Rejected)})
	}
	writeTable := func(id string, ws []checkers.WriteRef, total int) table {
		tb := table{ID: id, Head: []string{"at", "node", "token", "max before", "tenure", "write id", "detail"}}
		for _, w := range ws {
			ten := fmt.Sprint(w.Tenure)
			if w.Tenure < 0 {
				ten = "none"
			}
			tb.add(row{rel(w.T, t0), w.Node, fmt.Sprint(w.Token), fmt.Sprint(w.Max), ten, w.WriteID, roundDurationsIn(w.Detail)})
		}
		tb.More += total - len(ws)
		return tb
	}
	v.StaleAccepted = writeTable("stale-accepted", r.Resource.StaleAccepted, r.Resource.StaleAcceptedN)
	v.StaleRejected = writeTable("stale-rejected", r.Resource.StaleRejected, r.Resource.StaleRejectedN)
	v.Interleavings = writeTable("interleavings", r.Resource.Interleavings, r.Resource.InterleavingsN)
	v.ResourceBugs = writeTable("resource-bugs", r.Resource.ResourceBugs, r.Resource.ResourceBugsN)
	v.Disagreements = writeTable("disagreements", r.Resource.Disagreements, r.Resource.DisagreementsN)

	v.TokenAnomalies = table{ID: "token-anomalies", Head: []string{"kind", "at", "node", "token", "earlier tenure", "earlier at", "earlier token", "concurrent campaign"}}
	for _, a := range r.Tokens.Anomalies {
		v.TokenAnomalies.add(row{a.Kind, rel(a.T, t0), a.Node, fmt.Sprint(a.Token), fmt.Sprintf("#%d %s", a.PrevTenure, a.PrevNode), rel(a.PrevT, t0),
			fmt.Sprint(a.PrevToken), fmt.Sprint(a.ConcurrentRun)})
	}
	v.Contract = table{ID: "contract-violations", Head: []string{"kind", "at", "node", "seq", "detail"}}
	for _, c := range r.Contract.Violations {
		v.Contract.add(row{c.Kind, rel(c.T, t0), c.Node, fmt.Sprint(c.Seq), roundDurationsIn(c.Detail)})
	}
	v.Contract.More += r.Contract.Count - len(r.Contract.Violations)
	v.Unavail = table{ID: "unavailability", Head: []string{"start", "end", "length", "faults", "over bound", "open"}}
	for _, u := range r.Latency.Unavailability {
		v.Unavail.add(row{rel(u.StartT, t0), rel(u.EndT, t0), fmtDur(u.DurationNs), fmt.Sprint(u.FaultIDs), yesNo(u.ExceedsBound), yesNo(u.Open)})
	}
}

// porcupineViews: each Porcupine model's result, with a link to its visualization.
func porcupineViews(r *checkers.Results) []porcView {
	t0 := r.Run.StartT
	var out []porcView
	for _, m := range r.Porcupine.Models {
		pv := porcView{Model: m.Model, Result: m.Result, Meaning: m.Meaning, Note: m.Note, Ops: m.Ops, Partitions: m.Partitions,
			MaxOps: m.MaxPartitionOps, Duration: fmtDur(m.DurationNs), Class: "porc-" + m.Result}
		// Only a plain file name in this directory becomes a link.
		if m.Visualization != "" && m.Visualization == filepath.Base(m.Visualization) && !strings.HasPrefix(m.Visualization, ".") {
			pv.Viz = m.Visualization
		}
		if m.FailStartT > 0 {
			pv.FailWindow = fmt.Sprintf("%s → %s", rel(m.FailStartT, t0), rel(m.FailEndT, t0))
		}
		for _, op := range m.Unlinearized {
			pv.Unlinearized = append(pv.Unlinearized, fmt.Sprintf("%s (%s, token %d, called %s)", op.Desc, op.Node, op.Token, rel(op.CallT, t0)))
		}
		out = append(out, pv)
	}
	return out
}

// reportNotes say what the drawing left out or could not read.
func reportNotes(tl *timeline, h *rawHistory) []string {
	var notes []string
	if tl.TicksBinned {
		notes = append(notes, fmt.Sprintf("%d writes exceed the drawing cap of %d ticks: the timeline shows them aggregated into %d bins of %.0f px (hover a bin for its count).",
			tl.TicksTotal, MaxTicks, tl.TicksDrawn, binPx))
	}
	if tl.TenuresMerged > 0 {
		notes = append(notes, fmt.Sprintf("%d tenures shorter than a pixel are drawn merged with their neighbour; the tenure table lists them.", tl.TenuresMerged))
	}
	if h.badLines > 0 {
		notes = append(notes, fmt.Sprintf("%d lines of history.jsonl did not decode (a cut-off tail, typically) and are not drawn.", h.badLines))
	}
	if h.missing {
		notes = append(notes, "history.jsonl is missing: write ticks and process marks are not shown.")
	}
	return notes
}

// zoomWidth is the width of an explanation's zoomed timeline.
const zoomWidth = 900.0

// explainViews explains the verdict's reasons (one per code) and lays out a zoomed
// timeline of the involved nodes around each story; the reason list links to them.
func explainViews(r *checkers.Results, cfg *runConfig, h *rawHistory, reasons []reasonView) []explainView {
	var out []explainView
	for i, x := range Explain(r) {
		for j := range x.Steps {
			x.Steps[j].Text = roundDurationsIn(x.Steps[j].Text)
		}
		ev := explainView{ID: "why-" + safeID(x.Code), Code: x.Code, Severity: x.Severity, FaultID: x.FaultID, Steps: x.Steps,
			Nodes: strings.Join(x.Nodes, ", ")}
		if x.Reason < len(reasons) {
			reasons[x.Reason].WhyID = ev.ID
		}
		only := map[string]bool{}
		for _, n := range x.Nodes {
			only[n] = true
		}
		view := timelineView{t0: x.FromT, t1: x.ToT, width: zoomWidth, only: only, idPrefix: fmt.Sprintf("why%d-", i+1), origin: r.Run.StartT}
		ev.Zoom = layoutTimeline(r, cfg, h, view)
		sc := view.scale()
		n := 0
		for _, st := range x.Steps {
			if st.T == 0 {
				continue
			}
			n++
			ev.Zoom.Marks = append(ev.Zoom.Marks, vline{X: sc.x(st.T), Label: fmt.Sprint(n), Class: "mark step", Title: st.Text})
		}
		stagger(ev.Zoom.Marks, ev.Zoom.Height-24, 10)
		out = append(out, ev)
	}
	return out
}

func (t *table) add(r row) {
	if len(t.Rows) >= maxTableRows {
		t.More++
		return
	}
	t.Rows = append(t.Rows, r)
}

func sv(s checkers.Stats) statsView {
	if s.Count == 0 {
		return statsView{Count: "0", Median: "—", P99: "—", Max: "—"}
	}
	return statsView{Count: fmt.Sprint(s.Count), Median: fmtDur(s.MedianNs), P99: fmtDur(s.P99Ns), Max: fmtDur(s.MaxNs)}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func reasonViews(rs []checkers.Reason, prefix string, t0 int64) []reasonView {
	out := make([]reasonView, 0, len(rs))
	for i, r := range rs {
		rv := reasonView{Num: fmt.Sprintf("%s%d", strings.ToUpper(prefix), i+1), Checker: r.Checker, Code: r.Code, Severity: string(r.Severity),
			Message: roundDurationsIn(r.Message), T: r.T}
		if r.T > 0 {
			rv.MarkID = fmt.Sprintf("mark-%s%d", prefix, i+1)
			rv.When = rel(r.T, t0)
			if r.EndT > r.T {
				rv.When += " → " + rel(r.EndT, t0)
			}
		}
		rv.Nodes = strings.Join(r.Nodes, ", ")
		var toks []string
		for _, t := range r.Tokens {
			toks = append(toks, fmt.Sprint(t))
		}
		rv.Tokens = strings.Join(toks, ", ")
		out = append(out, rv)
	}
	return out
}

func runFacts(r *checkers.Results, cfg *runConfig) []fact {
	f := cfg.Flags
	p := r.Params
	store := firstNonEmpty(f.Store, p.Store)
	if cfg.StoreVersion != "" {
		store += " " + cfg.StoreVersion
	}
	nodes := fmt.Sprint(len(r.Run.Candidates))
	if f.Nodes > 0 {
		nodes = fmt.Sprint(f.Nodes)
	}
	nodes += " candidates"
	if len(cfg.StoreNodes) > 0 {
		nodes += fmt.Sprintf(", %d store nodes (%s)", len(cfg.StoreNodes), strings.Join(cfg.StoreNodes, ", "))
	}
	recipe := firstNonEmpty(f.Recipe, p.Recipe)
	if f.CandidateCmd != "" {
		recipe = firstNonEmpty(recipe, "external command "+f.CandidateCmd)
	}
	if f.CandidateImage != "" {
		recipe = firstNonEmpty(recipe, "external image "+f.CandidateImage)
	}
	ttl := fmtDurText(firstNonEmpty(f.TTL, fmtDurIf(int64(p.LeaseTTL))))
	if cfg.Recipe != nil {
		ttl = fmtDurText(cfg.Recipe.TTL)
		if cfg.Recipe.Renew != "" {
			ttl += ", renew " + fmtDurText(cfg.Recipe.Renew)
		}
		if cfg.Recipe.Retry != "" {
			ttl += ", retry " + fmtDurText(cfg.Recipe.Retry)
		}
	}
	workload := firstNonEmpty(cfg.Workload, f.Workload)
	if f.WriteInterval != "" && cfg.Workload == "" {
		workload += " (writes every " + fmtDurText(f.WriteInterval) + ")"
	}
	schedule := firstNonEmpty(cfg.Schedule, f.Nemesis, "none")
	seed := cfg.Seed
	if seed == 0 {
		seed = f.Seed
	}
	mode := firstNonEmpty(f.ResourceMode, p.ResourceMode)
	if len(r.Resource.Modes) > 0 {
		mode = strings.Join(r.Resource.Modes, ", ")
	}
	facts := []fact{
		{Key: "store", Value: firstNonEmpty(store, "unknown")},
		{Key: "recipe", Value: firstNonEmpty(recipe, "unknown")},
	}
	if len(p.Library) > 0 { // a library run as shipped: which build of it was judged
		facts = append(facts, fact{Key: "library", Value: strings.Join(p.Library, ", ")})
	}
	facts = append(facts, []fact{
		{Key: "nodes", Value: nodes},
		{Key: "TTL", Value: firstNonEmpty(ttl, "unknown")},
		{Key: "workload", Value: firstNonEmpty(workload, "unknown")},
		{Key: "resource", Value: firstNonEmpty(mode, "unknown")},
		{Key: "fault schedule", Value: schedule, Mono: true},
		{Key: "seed", Value: fmt.Sprint(seed), Mono: true},
		{Key: "duration", Value: fmtDur(r.Run.EndT - r.Run.StartT)},
		{Key: "failover bound", Value: fmtDur(r.BoundNs)},
	}...)
	if cfg.StoreReuse != "" {
		facts = append(facts, fact{Key: "store cluster", Value: cfg.StoreReuse})
	}
	if len(p.Require) > 0 {
		facts = append(facts, fact{Key: "requirements", Value: strings.Join(p.Require, ", ")})
	}
	if !cfg.Started.IsZero() {
		facts = append(facts, fact{Key: "started", Value: cfg.Started.UTC().Format("2006-01-02 15:04:05 MST")})
	}
	if cfg.RunID != "" {
		facts = append(facts, fact{Key: "run id", Value: cfg.RunID, Mono: true})
	}
	if cfg.Splitbrain != "" {
		facts = append(facts, fact{Key: "splitbrain", Value: cfg.Splitbrain, Mono: true})
	}
	if cfg.EngineVersion != "" {
		facts = append(facts, fact{Key: "docker engine", Value: cfg.EngineVersion})
	}
	if f.Profile != "" {
		facts = append(facts, fact{Key: "image profile", Value: f.Profile})
	}
	keys := make([]string, 0, len(cfg.Images))
	for k := range cfg.Images {
		keys = append(keys, k)
	}
	sortNatural(keys)
	for _, k := range keys {
		facts = append(facts, fact{Key: "image " + k, Value: cfg.Images[k], Mono: true})
	}
	facts = append(facts, fact{Key: "events", Value: fmt.Sprint(r.Run.Events)}, fact{Key: "checked in", Value: fmtDur(r.CheckNs)})
	return facts
}

func fmtDurIf(ns int64) string {
	if ns <= 0 {
		return ""
	}
	return fmtDur(ns)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// testName is the run's test directory name (store/<test>/<timestamp>), else a made-up label.
func testName(absDir string, cfg *runConfig, r *checkers.Results) string {
	parent := filepath.Base(filepath.Dir(absDir))
	if parent != "" && parent != "." && parent != string(filepath.Separator) {
		return parent
	}
	return firstNonEmpty(cfg.Flags.Store+"-"+cfg.Flags.Recipe, r.Params.Store+"-"+r.Params.Recipe)
}

// writeAtomic writes via a temporary file so a reader (serve, a browser) never sees half a
// page; it refuses to replace a device, FIFO or symlink (--combine-junit /dev/null).
func writeAtomic(path string, b []byte) error { return runfile.WriteFile(path, b, 0o644) }

// checkerRow is one checker's outcome in the report's checker table.
type checkerRow struct {
	Name, Status      string // ok | invalid | unknown
	Reasons, Findings int
}

// checkerRows iterates the checkers' own list, the same one junit.xml's test cases follow.
func checkerRows(r *checkers.Results) []checkerRow {
	var rows []checkerRow
	for _, name := range checkers.Names() {
		row := checkerRow{Name: name, Status: "ok"}
		for _, x := range r.Reasons {
			if x.Checker != name {
				continue
			}
			row.Reasons++
			if x.Severity == checkers.SevInvalid {
				row.Status = "invalid"
			} else if row.Status == "ok" {
				row.Status = "unknown"
			}
		}
		for _, x := range r.Findings {
			if x.Checker == name {
				row.Findings++
			}
		}
		rows = append(rows, row)
	}
	return rows
}
