package reports

import (
	"fmt"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/checkers"
)

// reasonGroup is what the report lists first: the reasons of one code that one tenure
// (node and token) caused, folded into a line with their count, time span and first and
// last write. A zombie leader's twenty writes are one stale-write group and one
// interleaving group, not forty lines; each reason stays listed in full further down.
type reasonGroup struct {
	ID                string
	Severity, Checker string
	Code              string
	Who               string // "c1, token 1" (the tenure), or the nodes a lone reason names
	Count             int
	// More counts reasons of this code the checkers summarised instead of listing
	// (checkers' per-code cap); they are in the checker's section and results.json.
	More        int
	First, Last reasonView
	Span        string // length from the first reason to the last, "" for one reason
	FirstWrite  string
	LastWrite   string
	Message     string // the first reason's message: the whole story when Count is 1
	WhyID       string
}

// groupReasons folds reasons by code and tenure, in the order of each group's first reason.
// Reasons that name no node and token are grouped only with identical messages.
func groupReasons(r *checkers.Results, views []reasonView, why map[string]string) []reasonGroup {
	writeOf := writeIDsBySeq(r)
	var groups []reasonGroup
	index := map[string]int{}
	summaries := map[string]int{} // code -> reasons left out of the list
	for i, rs := range r.Reasons {
		if rs.Count > 0 && rs.T == 0 && len(rs.Nodes) == 0 {
			summaries[rs.Code] += rs.Count
			continue
		}
		key := rs.Code + "\x00" + string(rs.Severity) + "\x00"
		who := strings.Join(rs.Nodes, ", ")
		if len(rs.Nodes) > 0 && len(rs.Tokens) > 0 {
			key += fmt.Sprintf("%s\x00%d", rs.Nodes[0], rs.Tokens[0])
			who = fmt.Sprintf("%s, token %d", rs.Nodes[0], rs.Tokens[0])
		} else {
			key += rs.Message
		}
		w := ""
		if len(rs.Seqs) > 0 {
			w = writeOf[rs.Seqs[0]]
		}
		gi, ok := index[key]
		if !ok {
			gi = len(groups)
			index[key] = gi
			groups = append(groups, reasonGroup{ID: fmt.Sprintf("group-%d", gi+1), Severity: string(rs.Severity), Checker: rs.Checker,
				Code: rs.Code, Who: who, First: views[i], FirstWrite: w, Message: views[i].Message, WhyID: why[rs.Code]})
		}
		g := &groups[gi]
		g.Count++
		if rs.T > 0 && (g.First.T == 0 || rs.T < g.First.T) {
			g.First, g.FirstWrite = views[i], w
		}
		if rs.T >= g.Last.T {
			g.Last, g.LastWrite = views[i], w
		}
	}
	for gi := range groups {
		g := &groups[gi]
		if g.Count > 1 && g.Last.T > g.First.T {
			g.Span = fmtDur(g.Last.T - g.First.T)
		}
	}
	// A code's summarised remainder joins its group when there is one, else stands alone.
	for _, rs := range r.Reasons {
		n, ok := summaries[rs.Code]
		if !ok {
			continue
		}
		delete(summaries, rs.Code)
		target := -1
		for gi := range groups {
			if groups[gi].Code == rs.Code {
				if target >= 0 {
					target = -2 // several tenures: the remainder belongs to none of them
					break
				}
				target = gi
			}
		}
		if target >= 0 {
			groups[target].More += n
			continue
		}
		groups = append(groups, reasonGroup{ID: fmt.Sprintf("group-%d", len(groups)+1), Severity: string(rs.Severity), Checker: rs.Checker,
			Code: rs.Code, More: n, Message: roundDurationsIn(rs.Message), WhyID: why[rs.Code]})
	}
	return groups
}

// writeIDsBySeq maps a decision's history seq to its write id, from the resource section's
// write lists (the reasons name writes by seq only).
func writeIDsBySeq(r *checkers.Results) map[int64]string {
	out := map[int64]string{}
	for _, list := range [][]checkers.WriteRef{r.Resource.StaleAccepted, r.Resource.StaleRejected, r.Resource.Interleavings,
		r.Resource.ResourceBugs, r.Resource.Disagreements} {
		for _, w := range list {
			if w.WriteID != "" {
				out[w.Seq] = w.WriteID
			}
		}
	}
	return out
}
