package checkers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// lateHistory builds an unfenced run by hand (times in ms): c1 leads with token 1, c2 is
// elected with token 2 at 1000 ms and writes at 1010 ms; lateWrites are c1's writes, each
// {sent, decided} in ms, all accepted after c2's write (stale). dupToken makes c3 take
// token 2 again later (token-duplicate).
func lateHistory(lateWrites [][2]int64, dupToken bool) []history.Event {
	var evs []history.Event
	add := func(ms int64, e history.Event) {
		e.V, e.Seq, e.T, e.Source = history.Version, int64(len(evs)+1), ms*int64(time.Millisecond), history.SourceOf(e.Kind)
		evs = append(evs, e)
	}
	n := 0
	write := func(sent, decided int64, node string, tok, max int64) {
		n++
		id := fmt.Sprintf("%s-%d", node, n)
		add(decided, history.Event{Kind: history.KindDecision, Node: node, Token: tok, WriteID: id, Result: history.ResultAccepted,
			Max: max, Stale: tok < max, Mode: ModeUnfenced})
		add(decided+1, history.Event{Kind: history.KindWrite, Node: node, Token: tok, WriteID: id, CallT: sent * int64(time.Millisecond), Result: history.ResultAccepted})
	}
	add(1, history.Event{Kind: history.KindRunStart})
	add(2, history.Event{Kind: history.KindCampaigning, Node: "c1"})
	add(3, history.Event{Kind: history.KindCampaigning, Node: "c2"})
	add(10, history.Event{Kind: history.KindElected, Node: "c1", Token: 1})
	write(100, 101, "c1", 1, 0)
	add(1000, history.Event{Kind: history.KindElected, Node: "c2", Token: 2})
	write(1010, 1011, "c2", 2, 1)
	for _, w := range lateWrites {
		write(w[0], w[1], "c1", 1, 2)
	}
	add(3000, history.Event{Kind: history.KindSteppedDown, Node: "c1", Reason: "deadline"})
	if dupToken {
		add(3100, history.Event{Kind: history.KindSteppedDown, Node: "c2", Reason: "deadline"})
		add(3200, history.Event{Kind: history.KindCampaigning, Node: "c3"})
		add(3300, history.Event{Kind: history.KindElected, Node: "c3", Token: 2})
	}
	add(4000, history.Event{Kind: history.KindRunEnd})
	return evs
}

func checkLate(t *testing.T, evs []history.Event) (*Results, LateWrites) {
	t.Helper()
	res, err := Check(context.Background(), evs, Params{LeaseTTL: Duration(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Invalid {
		t.Fatalf("the hand-made history must be invalid, the checkers said %s: %+v", res.Verdict, res.Reasons)
	}
	if res.LateWrites == nil || !reflect.DeepEqual(*res.LateWrites, AttributeLateWrites(res, evs)) {
		t.Fatalf("Check's late writes %+v, want the attribution of its results", res.LateWrites)
	}
	return res, *res.LateWrites
}

func TestLateWritesInFlightAtTheTakeover(t *testing.T) {
	// Sent 5 ms before c2's election, accepted 35 ms after it: the window.
	// (Porcupine's fenced register passes: the write's call..return overlaps c2's write.)
	_, l := checkLate(t, lateHistory([][2]int64{{995, 1035}}, false))
	if l.InFlight != 1 || l.AfterElection != 0 || l.Unattributed != 0 || len(l.OtherCodes) != 0 {
		t.Fatalf("want 1 in flight and nothing else, got %+v", l)
	}
	if l.MaxLag != 35*time.Millisecond {
		t.Errorf("lag from the election to the acceptance: want 35ms, got %v", l.MaxLag)
	}
	if !l.WindowOnly() || !strings.HasPrefix(l.String(), "window only: ") {
		t.Errorf("want window only, got %q", l.String())
	}
}

func TestLateWritesSentAfterTheElectionCountAgainstTheCandidate(t *testing.T) {
	// One write in flight, one sent 200 ms after c2's election: not window only.
	res, l := checkLate(t, lateHistory([][2]int64{{995, 1035}, {1200, 1201}}, false))
	if l.InFlight != 1 || l.AfterElection != 1 {
		t.Fatalf("want 1 in flight and 1 after the election, got %+v", l)
	}
	// The write sent after c2's write returned fails Porcupine's fenced register too: the
	// same late write, not another reason.
	if !slices.ContainsFunc(res.Reasons, func(r Reason) bool { return r.Code == fencedRegisterIllegal }) || len(l.OtherCodes) != 0 {
		t.Fatalf("want fenced-register-illegal among the reasons and counted with the late writes: reasons %+v, other %v", res.Reasons, l.OtherCodes)
	}
	if l.WindowOnly() || !strings.HasPrefix(l.String(), "not window only: ") {
		t.Errorf("a write sent after the next election makes it not window only, got %q", l.String())
	}
}

func TestLateWritesOtherInvalidReasonsCount(t *testing.T) {
	// Only in-flight writes, but a duplicated token makes the run invalid too.
	_, l := checkLate(t, lateHistory([][2]int64{{995, 1035}}, true))
	if l.InFlight != 1 || l.AfterElection != 0 {
		t.Fatalf("want 1 in flight, got %+v", l)
	}
	if len(l.OtherCodes) == 0 || l.WindowOnly() {
		t.Fatalf("token-duplicate is another invalid reason: want it listed and not window only, got %+v", l)
	}
}

func TestLateWritesWithoutASendTimeAreNotPlaced(t *testing.T) {
	evs := lateHistory([][2]int64{{995, 1035}}, false)
	for i := range evs {
		if evs[i].Kind == history.KindWrite && evs[i].Node == "c1" && evs[i].T > 1000*int64(time.Millisecond) {
			evs[i].CallT = 0 // a candidate that does not report send times
		}
	}
	_, l := checkLate(t, evs)
	if l.Unattributed != 1 || l.WindowOnly() {
		t.Fatalf("a write with no send time cannot be placed, and must not count as the window: %+v", l)
	}
	// Writes past results.json's capped lists are not placeable either.
	res, _ := checkLate(t, lateHistory([][2]int64{{995, 1035}}, false))
	res.Resource.StaleAcceptedN += 5
	if l := AttributeLateWrites(res, lateHistory([][2]int64{{995, 1035}}, false)); l.Unattributed != 5 || l.WindowOnly() {
		t.Fatalf("5 flagged writes beyond the detail list: want 5 not placeable, got %+v", l)
	}
}
