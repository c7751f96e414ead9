package reports

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history/runfile"
	"github.com/splitbrain-chaos/splitbrain/internal/faultkinds"
)

// Explanation tells, in a few plain sentences, how one reason that made the verdict came
// about: the fault that set it up, the elections and writes that matter, in order, with
// their times from the start of that fault. One per reason code (its first occurrence).
type Explanation struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Reason   int    `json:"reason"` // index of the reason in results.json's reasons
	// Text is the story in one line ("c3 paused at +13.180s (fault 1, ...) · ...").
	Text  string        `json:"text"`
	Steps []ExplainStep `json:"steps"`
	// FaultID is the fault the times count from (0: none, times count from the run start).
	FaultID int   `json:"fault_id,omitempty"`
	ZeroT   int64 `json:"zero_t"` // what the relative times count from
	// Nodes and FromT..ToT are the zoomed timeline's lanes and window.
	Nodes []string `json:"nodes"`
	FromT int64    `json:"from_t"`
	ToT   int64    `json:"to_t"`
}

// ExplainStep is one event of an explanation.
type ExplainStep struct {
	T    int64  `json:"t"`
	Rel  string `json:"rel"` // T relative to ZeroT, e.g. "+2.010s"
	Text string `json:"text"`
}

// Explain builds the explanations of a run's verdict from its results (the checkers' view
// of the history: faults, tenures, reasons). Reasons are explained in order, the first of
// each code only; findings are not explained (they do not make the verdict).
func Explain(r *checkers.Results) []Explanation {
	if r == nil {
		return nil
	}
	var out []Explanation
	seen := map[string]bool{}
	for i, rs := range r.Reasons {
		if seen[rs.Code] || (rs.Severity != checkers.SevInvalid && rs.Severity != checkers.SevUnknown) {
			continue
		}
		seen[rs.Code] = true
		x := newStory(r, rs)
		explainers[explainerFor(rs.Code)](x)
		x.fenceSteps()
		out = append(out, x.done(i))
	}
	return out
}

// explainers tell each kind of reason; codes without their own use the generic one.
var explainers = map[string]func(*story){
	"stale-write-accepted":    explainStaleWrite,
	"interleaving":            explainInterleaving,
	"token-duplicate":         explainTokens,
	"token-not-monotone":      explainTokens,
	"leader-overlap":          explainOverlap,
	"fenced-register-illegal": explainRegister,
	"generic":                 explainGeneric,
}

func explainerFor(code string) string {
	if _, ok := explainers[code]; ok {
		return code
	}
	return "generic"
}

// story collects the steps of one explanation.
type story struct {
	r      *checkers.Results
	reason checkers.Reason
	fault  *checkers.FaultWindow // the fault the story starts from, if any
	zero   int64
	steps  []ExplainStep
	nodes  []string
	from   int64
	to     int64
}

func newStory(r *checkers.Results, rs checkers.Reason) *story {
	x := &story{r: r, reason: rs, zero: r.Run.StartT, from: rs.T, to: max(rs.EndT, rs.T)}
	if op := firstUnplaced(r, rs); op != nil {
		// Porcupine's reason spans the whole failing partition; the story is about the
		// first operation that cannot be placed.
		x.from, x.to = op.CallT, op.CallT
		rs.T = op.CallT
	}
	x.fault = causingFault(r.Faults, rs)
	if x.fault != nil {
		x.zero = x.fault.StartT
		x.from = min(x.from, x.fault.StartT)
		x.involve(x.fault.Targets...)
	}
	x.involve(rs.Nodes...)
	return x
}

// causingFault is the latest fault that started at or before the reason and hit one of its
// nodes; else the latest that started before it; nil when no fault came first.
func causingFault(faults []checkers.FaultWindow, rs checkers.Reason) *checkers.FaultWindow {
	var anyF, hit *checkers.FaultWindow
	for i := range faults {
		f := &faults[i]
		if f.Error != "" || (rs.T > 0 && f.StartT > rs.T) {
			continue
		}
		anyF = f
		for _, n := range rs.Nodes {
			if slices.Contains(f.Targets, n) {
				hit = f
			}
		}
	}
	if hit != nil {
		return hit
	}
	return anyF
}

func (x *story) involve(nodes ...string) {
	for _, n := range nodes {
		if n != "" && !slices.Contains(x.nodes, n) {
			x.nodes = append(x.nodes, n)
		}
	}
}

// at adds a step at time t (0: no time known).
func (x *story) at(t int64, format string, args ...any) {
	s := ExplainStep{T: t, Text: fmt.Sprintf(format, args...)}
	if t > 0 {
		s.Rel = relTo(t, x.zero)
		s.Text += " at " + s.Rel
		x.from = minNonZero(x.from, t)
		x.to = max(x.to, t)
	}
	x.steps = append(x.steps, s)
}

// note adds a step without a time.
func (x *story) note(format string, args ...any) {
	x.steps = append(x.steps, ExplainStep{Text: fmt.Sprintf(format, args...)})
}

// faultStart opens the story with the fault: "c3 paused at +13.180s (fault 1, pause for 6s)".
func (x *story) faultStart() {
	f := x.fault
	if f == nil {
		return
	}
	x.steps = append(x.steps, ExplainStep{T: f.StartT, Rel: rel(f.StartT, x.r.Run.StartT),
		Text: fmt.Sprintf("%s %s at %s of the run (fault %d, %s for %s; times below count from here)",
			strings.Join(f.Targets, ", "), faultVerbs(f.Kind).start, rel(f.StartT, x.r.Run.StartT), f.ID, f.Kind, fmtDur(f.EndT-f.StartT))})
	if f.Trigger != "" {
		x.steps[len(x.steps)-1].Text += ", " + triggerText(*f, x.r.Run.StartT)
	}
}

// triggerText says which event started a triggered fault and how long after it the fault
// took effect: "triggered by step:lock-acquired of c3 at +13.150s, in effect 30ms later".
func triggerText(f checkers.FaultWindow, t0 int64) string {
	s := "triggered by " + f.Trigger
	if len(f.TriggerNodes) > 0 {
		s += " of " + strings.Join(f.TriggerNodes, ", ")
	}
	if f.TriggerT > 0 {
		s += " at " + rel(f.TriggerT, t0) + ", in effect " + fmtDur(f.StartT-f.TriggerT) + " later"
	}
	return s
}

// faultEnd adds the heal if it came before t (or t is 0).
func (x *story) faultEnd(before int64) {
	f := x.fault
	if f == nil || f.Open || f.EndT <= f.StartT || (before > 0 && f.EndT > before) {
		return
	}
	x.at(f.EndT, "%s %s", strings.Join(f.Targets, ", "), faultVerbs(f.Kind).end)
}

// leaseOut says when a silenced leader's lease ran out, for faults that silence it.
func (x *story) leaseOut(node string) {
	f := x.fault
	ttl := int64(x.r.Params.LeaseTTL)
	if f == nil || ttl <= 0 || !slices.Contains(f.Targets, node) || !faultVerbs(f.Kind).silences {
		return
	}
	if f.EndT > 0 && f.EndT-f.StartT <= ttl {
		return
	}
	if specParam(f.Spec, "process") == "app" {
		return // only the application was stopped: its sidecar kept renewing the lease
	}
	// Renewed last before the fault, the lease ran out within one TTL of its start.
	t := f.StartT + ttl
	x.steps = append(x.steps, ExplainStep{T: t, Rel: relTo(t, x.zero),
		Text: fmt.Sprintf("its lease (TTL %s) had run out by %s at the latest", fmtDur(ttl), relTo(t, x.zero))})
	x.to = max(x.to, t)
}

// specParam is key's value in a fault spec "kind:k=v,k=v" ("" when absent).
func specParam(spec, key string) string {
	_, params, _ := strings.Cut(spec, ":")
	for kv := range strings.SplitSeq(params, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// elected adds the election of node with token, if the tenure is known.
func (x *story) elected(node string, token int64) *checkers.Tenure {
	t := x.tenure(node, token)
	if t == nil {
		return nil
	}
	x.involve(node)
	x.at(t.StartT, "%s elected with token %d", node, token)
	return t
}

func (x *story) tenure(node string, token int64) *checkers.Tenure {
	for i := range x.r.Tenures.Tenures {
		t := &x.r.Tenures.Tenures[i]
		if t.Node == node && t.Token == token {
			return t
		}
	}
	return nil
}

func (x *story) done(i int) Explanation {
	// Steps in time order; untimed ones (the conclusion) stay at the end.
	slices.SortStableFunc(x.steps, func(a, b ExplainStep) int {
		switch {
		case a.T == 0 && b.T == 0:
			return 0
		case a.T == 0:
			return 1
		case b.T == 0:
			return -1
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	var texts []string
	for _, s := range x.steps {
		texts = append(texts, s.Text)
	}
	e := Explanation{Code: x.reason.Code, Severity: string(x.reason.Severity), Reason: i, Text: strings.Join(texts, " · "),
		Steps: x.steps, ZeroT: x.zero, Nodes: x.nodes, FromT: x.from, ToT: x.to}
	if e.Nodes == nil {
		e.Nodes = []string{}
	}
	if x.fault != nil {
		e.FaultID = x.fault.ID
	}
	// Some margin around the window so the zoomed timeline shows what led up to it.
	pad := max(int64(time.Second), (e.ToT-e.FromT)/10)
	e.FromT = max(x.r.Run.StartT, e.FromT-pad)
	if x.r.Run.EndT > 0 {
		e.ToT = min(x.r.Run.EndT, e.ToT+pad)
	} else {
		e.ToT += pad
	}
	if e.ToT <= e.FromT {
		e.ToT = e.FromT + int64(time.Second)
	}
	return e
}

// explainStaleWrite: the writer was silenced, lost its lease, a rival was elected with a
// higher token and wrote, the writer came back and wrote with its old token, accepted.
func explainStaleWrite(x *story) {
	rs := x.reason
	writer, tok, maxTok := first(rs.Nodes), tokenAt(rs.Tokens, 0), tokenAt(rs.Tokens, 1)
	x.faultStart()
	x.leaseOut(writer)
	if rival := x.holderOf(maxTok, writer); rival != "" {
		x.elected(rival, maxTok)
	}
	x.faultEnd(rs.T)
	if st := rs.LastStep; st != nil {
		x.at(st.T, "%s reported step %s (its last before the write)", writer, st.Name)
	}
	x.at(rs.T, "%s wrote with its old token %d", writer, tok)
	x.note("the %s resource accepted it although token %d had already been accepted", modeOf(x.r), maxTok)
}

// explainInterleaving: an older tenure wrote after a newer one had written.
func explainInterleaving(x *story) {
	rs := x.reason
	old, newer := first(rs.Nodes), nth(rs.Nodes, 1)
	oldTok, newTok := tokenAt(rs.Tokens, 0), tokenAt(rs.Tokens, 1)
	x.faultStart()
	x.elected(old, oldTok)
	x.leaseOut(old)
	x.elected(newer, newTok)
	x.faultEnd(rs.T)
	x.at(rs.T, "%s wrote with token %d after %s's token %d had been accepted", old, oldTok, newer, newTok)
	x.note("the resource accepted writes of two tenures out of order")
}

// explainTokens: two elections whose tokens do not increase.
func explainTokens(x *story) {
	rs := x.reason
	node, prev := first(rs.Nodes), nth(rs.Nodes, 1)
	tok, prevTok := tokenAt(rs.Tokens, 0), tokenAt(rs.Tokens, 1)
	x.faultStart()
	x.elected(prev, prevTok)
	if x.elected(node, tok) == nil {
		x.at(rs.T, "%s elected with token %d", node, tok)
	}
	if rs.Code == "token-duplicate" {
		x.note("the same token twice: the resource cannot tell the two leaders apart")
	} else {
		x.note("token %d is lower than the earlier %d: a fenced resource would reject the newer leader", tok, prevTok)
	}
}

// explainOverlap: the leaders that believed at once.
func explainOverlap(x *story) {
	rs := x.reason
	x.faultStart()
	for i, n := range rs.Nodes {
		x.elected(n, tokenAt(rs.Tokens, i))
	}
	nodes := slices.Compact(slices.Sorted(slices.Values(rs.Nodes)))
	who := "all"
	if len(nodes) == 2 {
		who = "both"
	}
	x.at(rs.T, "%s %s believed they led", strings.Join(nodes, " and "), who)
	if rs.EndT > rs.T {
		x.at(rs.EndT, "the overlap ended after %s", fmtDur(rs.EndT-rs.T))
	}
}

// explainRegister: the first write no linearization can place, told like a stale write.
func explainRegister(x *story) {
	op := firstUnplaced(x.r, x.reason)
	if op == nil {
		explainGeneric(x)
		return
	}
	x.faultStart()
	x.leaseOut(op.Node)
	var higher *checkers.Tenure
	for i := range x.r.Tenures.Tenures {
		t := &x.r.Tenures.Tenures[i]
		if t.Token > op.Token && t.StartT < op.CallT && (higher == nil || t.Token > higher.Token) {
			higher = t
		}
	}
	if higher != nil {
		x.elected(higher.Node, higher.Token)
	}
	x.faultEnd(op.CallT)
	x.involve(op.Node)
	x.at(op.CallT, "%s", op.Desc)
	if higher != nil {
		x.note("no order of the register's operations explains it: token %d was already in use, so token %d must not be accepted", higher.Token, op.Token)
	} else {
		x.note("no order of the register's operations explains it")
	}
}

// firstUnplaced is the first operation Porcupine could not place, for a register reason.
func firstUnplaced(r *checkers.Results, rs checkers.Reason) *checkers.OpRef {
	if rs.Checker != "porcupine" {
		return nil
	}
	for _, m := range r.Porcupine.Models {
		if m.FailStartT == rs.T && len(m.Unlinearized) > 0 {
			return &m.Unlinearized[0]
		}
	}
	return nil
}

// explainGeneric: the fault in effect and the checker's own message.
func explainGeneric(x *story) {
	rs := x.reason
	x.faultStart()
	x.faultEnd(rs.T)
	msg := strings.TrimSuffix(rs.Message, ".")
	if rs.T > 0 {
		x.steps = append(x.steps, ExplainStep{T: rs.T, Rel: relTo(rs.T, x.zero), Text: fmt.Sprintf("%s: %s", relTo(rs.T, x.zero), msg)})
		x.to = max(x.to, rs.T)
	} else {
		x.note("%s", msg)
	}
}

// holderOf is the node elected with token (not skip, when another one has it).
func (x *story) holderOf(token int64, skip string) string {
	var found string
	for _, t := range x.r.Tenures.Tenures {
		if t.Token == token {
			if t.Node != skip {
				return t.Node
			}
			found = t.Node
		}
	}
	return found
}

type verbs struct {
	start, end string
	silences   bool // the target cannot renew its lease while the fault lasts
}

// faultVerbs are a fault kind's words for its start and heal, from its definition; a kind
// this build does not know (a history from another version) gets neutral ones.
func faultVerbs(kind string) verbs {
	if k, ok := faultkinds.Info(kind); ok && k.Started != "" {
		return verbs{k.Started, k.Healed, k.Silences}
	}
	return verbs{"hit by a " + kind + " fault", "healed", false}
}

func modeOf(r *checkers.Results) string {
	if len(r.Resource.Modes) > 0 {
		return strings.Join(r.Resource.Modes, "/")
	}
	return firstNonEmpty(r.Params.ResourceMode, "fenced")
}

// relTo renders t relative to zero: "+2.010s", or "-150.0ms" before it.
func relTo(t, zero int64) string {
	if t < zero {
		return "-" + fmtStamp(zero-t)
	}
	return "+" + fmtStamp(t-zero)
}

func minNonZero(a, b int64) int64 {
	if a == 0 {
		return b
	}
	return min(a, b)
}

func first(s []string) string { return nth(s, 0) }

func nth(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "?"
}

func tokenAt(t []int64, i int) int64 {
	if i < len(t) {
		return t[i]
	}
	return 0
}

// ResultsDocument is results.json as a run writes it: the checkers' results with the
// explanations of the verdict alongside.
type ResultsDocument struct {
	*checkers.Results
	Explanations []Explanation `json:"explanations"`
}

// NewResultsDocument explains r's verdict.
func NewResultsDocument(r *checkers.Results) ResultsDocument {
	xs := Explain(r)
	if xs == nil {
		xs = []Explanation{}
	}
	return ResultsDocument{Results: r, Explanations: xs}
}

// WriteResults (re)writes dir's results.json, the results with their explanations: the one
// writer of that file (a run's check, `splitbrain check --write`). It returns the document
// written. A results.json that is not a regular file is refused, not replaced.
func WriteResults(dir string, r *checkers.Results) (ResultsDocument, error) {
	doc := NewResultsDocument(r)
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return doc, err
	}
	if err := runfile.WriteFile(filepath.Join(dir, runfile.ResultsFile), append(b, '\n'), 0o644); err != nil {
		return doc, fmt.Errorf("write results: %w", err)
	}
	return doc, nil
}
