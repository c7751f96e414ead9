package suite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// The matrix re-checks each run from its directory: the run's own results agree; results
// that say something else (a verdict the history does not support) fail the row.
func TestRecheckFindsDisagreement(t *testing.T) {
	dir := t.TempDir()
	w, err := history.Create(filepath.Join(dir, checkers.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	ms := int64(1_000_000)
	for _, e := range []history.Event{
		{T: 1 * ms, Kind: history.KindRunStart},
		{T: 2 * ms, Kind: history.KindCampaigning, Node: "c1"},
		{T: 3 * ms, Kind: history.KindElected, Node: "c1", Token: 1, CallT: 2 * ms},
		{T: 4 * ms, Kind: history.KindDecision, Node: "c1", Token: 1, WriteID: "a", Result: history.ResultAccepted, Mode: "fenced"},
		{T: 9 * ms, Kind: history.KindRunEnd, Reason: "cancelled: interrupt"},
	} {
		e.Source = history.SourceOf(e.Kind)
		if _, err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, _ := checkers.LoadParams(dir)
	stored, _, err := checkers.CheckDir(context.Background(), dir, p)
	if err != nil {
		t.Fatal(err)
	}
	if d := Recheck(context.Background(), dir, stored); len(d) != 0 {
		t.Fatalf("the run's own results disagree with a re-check: %v", d)
	}
	// What the old harness did: demote or promote outside the checkers.
	lie := *stored
	lie.Verdict, lie.Reasons = checkers.Valid, nil
	d := Recheck(context.Background(), dir, &lie)
	if len(d) < 2 || !strings.Contains(d[0], "verdict valid vs unknown") || !strings.Contains(strings.Join(d, " "), "run-incomplete") {
		t.Fatalf("disagreement not found: %v", d)
	}
}
