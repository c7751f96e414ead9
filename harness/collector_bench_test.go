package harness

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// BenchmarkCollectorWriteLine: one candidate write line parsed, validated, appended to
// history.jsonl and folded into the live state — the hot path of a run (every leader
// write produces one candidate line and one resource line).
func BenchmarkCollectorWriteLine(b *testing.B) {
	w, err := history.Create(filepath.Join(b.TempDir(), HistoryFile))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	r := NewRecorder(w, NewLiveState())
	now := history.Now()
	lines := make([][]byte, 1024)
	for i := range lines {
		lines[i] = []byte(fmt.Sprintf(`{"t":%d,"kind":"write","token":7,"write_id":"c1-abc-%d","call_t":%d,"result":"accepted"}`, now, i, now-1000))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.CandidateLine("c1", lines[i%len(lines)])
	}
	b.StopTimer()
	if d, err := r.Dropped(); d != 0 {
		b.Fatalf("dropped %d: %v", d, err)
	}
}

// BenchmarkCollectorDecisionLine: one resource decision line.
func BenchmarkCollectorDecisionLine(b *testing.B) {
	w, err := history.Create(filepath.Join(b.TempDir(), HistoryFile))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	r := NewRecorder(w, NewLiveState())
	line := []byte(fmt.Sprintf(`{"t":%d,"kind":"decision","node":"c1","token":7,"write_id":"c1-abc-1","result":"accepted","max":7,"mode":"fenced"}`, history.Now()))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.ResourceLine("resource", line)
	}
}
