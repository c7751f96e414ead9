package checkers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// LateWrites says, for an invalid run, when each write that made it invalid (accepted
// stale, or interleaved after a newer tenure's write) was sent, relative to the election of
// the next leader after the writer's tenure. It changes no verdict: it tells two causes
// apart that the verdict does not.
//
//   - InFlight: sent before the next leader announced its election and accepted after it.
//     A leader whose lease check was right when it checked can still do this: between its
//     check and the write's arrival any pause or delay may outlast the rest of its lease.
//     That is the check-then-send window every lease without a fence has; only a fenced
//     resource closes it.
//   - AfterElection: sent after the next leader announced its election, so the writer's
//     check (if it made one) did not stop it: what the corpus bugs do. The history has no
//     time of the check itself, so a pause between a valid check and the send that outlasts
//     the lease looks the same; it is counted here, against the candidate, never for it.
type LateWrites struct {
	InFlight      int `json:"in_flight"`
	AfterElection int `json:"after_election"`
	// Unattributed: flagged writes the history cannot place (no write event with a send
	// time, no tenure, no later election, or beyond results.json's detail lists).
	Unattributed int `json:"unattributed"`
	// MaxLag is the longest time from the next leader's election to the acceptance of an
	// in-flight write.
	MaxLag time.Duration `json:"max_lag_ns"`
	// OtherCodes are the run's invalid reasons that are not about late writes
	// (token-duplicate, leader-overlap, ...): they count against the candidate too.
	OtherCodes []string `json:"other_codes"`
}

// lateCodes are the invalid reasons LateWrites attributes write by write. Porcupine's
// fenced-register model (accept iff token >= max) fails on an unfenced resource only through
// the same stale acceptances (the resource's decision order, each decision inside its
// write's call..return, would otherwise be a legal order), so it counts with them when the
// resource checker listed stale writes, and as another reason when it did not.
var lateCodes = []string{"stale-write-accepted", "interleaving"}

const fencedRegisterIllegal = "fenced-register-illegal"

// AttributeLateWrites attributes the flagged writes of a checked run (its results and its
// history).
func AttributeLateWrites(res *Results, events []history.Event) LateWrites {
	var l LateWrites
	for _, r := range res.Reasons {
		late := slices.Contains(lateCodes, r.Code) || (r.Code == fencedRegisterIllegal && res.Resource.StaleAcceptedN > 0)
		if r.Severity == SevInvalid && !late && !slices.Contains(l.OtherCodes, r.Code) {
			l.OtherCodes = append(l.OtherCodes, r.Code)
		}
	}
	slices.Sort(l.OtherCodes)
	sent := map[string]int64{}
	for _, e := range events {
		if e.Kind == history.KindWrite && e.WriteID != "" && e.CallT > 0 {
			sent[e.WriteID] = e.CallT
		}
	}
	tenures := res.Tenures.Tenures
	seen := map[int64]bool{}
	place := func(w WriteRef) {
		if seen[w.Seq] {
			return // stale and interleaved: one write
		}
		seen[w.Seq] = true
		callT, ok := sent[w.WriteID]
		if !ok || w.Tenure < 0 || w.Tenure+1 >= len(tenures) {
			l.Unattributed++
			return
		}
		next := tenures[w.Tenure+1] // tenures are in election order
		if callT < next.StartT {
			l.InFlight++
			l.MaxLag = max(l.MaxLag, time.Duration(w.T-next.StartT))
			return
		}
		l.AfterElection++
	}
	for _, w := range res.Resource.StaleAccepted {
		place(w)
	}
	for _, w := range res.Resource.Interleavings {
		place(w)
	}
	// Counts are complete, the lists capped: writes past the lists cannot be placed. (A
	// write in both lists past both caps is counted twice here: conservative.)
	l.Unattributed += max(0, res.Resource.StaleAcceptedN-len(res.Resource.StaleAccepted)) +
		max(0, res.Resource.InterleavingsN-len(res.Resource.Interleavings))
	return l
}

// WindowOnly is true when every write that made the run invalid was in flight at a takeover
// and nothing else made it invalid: the check-then-send window, not the candidate's lease
// logic. The run stays invalid.
func (l LateWrites) WindowOnly() bool {
	return l.InFlight > 0 && l.AfterElection == 0 && l.Unattributed == 0 && len(l.OtherCodes) == 0
}

// String is one line for the run's and the search's output and the report; it starts with "window only" or "not window
// only" so that logs can be counted.
func (l LateWrites) String() string {
	class := "not window only"
	if l.WindowOnly() {
		class = "window only"
	}
	inFlight := "0 in flight at the takeover"
	if l.InFlight > 0 {
		inFlight = fmt.Sprintf("%d in flight at the takeover (sent before it, accepted up to %v after: the check-then-send window, only a fence closes it)",
			l.InFlight, l.MaxLag.Round(time.Millisecond))
	}
	parts := []string{fmt.Sprintf("%d sent after the next leader's election", l.AfterElection), inFlight}
	if l.Unattributed > 0 {
		parts = append(parts, fmt.Sprintf("%d not placeable", l.Unattributed))
	}
	if len(l.OtherCodes) > 0 {
		parts = append(parts, "other invalid reasons: "+strings.Join(l.OtherCodes, ","))
	}
	return class + ": " + strings.Join(parts, "; ")
}
