package harness

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/history"
)

func newTestRecorder(t *testing.T) (*Recorder, *LiveState, *history.Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), HistoryFile)
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	st := NewLiveState()
	return NewRecorder(w, st), st, w, path
}

func readBack(t *testing.T, w *history.Writer, path string) []history.Event {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, info, err := history.ReadFile(path)
	if err != nil || info.TruncatedTail {
		t.Fatalf("read back: %v %+v", err, info)
	}
	return evs
}

func TestCollectorCandidateLines(t *testing.T) {
	r, st, w, path := newTestRecorder(t)
	now := history.Now()
	lines := []string{
		fmt.Sprintf(`{"t":%d,"kind":"campaigning","clock":"offset-file"}`, now-10),
		fmt.Sprintf(`{"t":%d,"kind":"elected","token":7}`, now-9),
		`plain log output, not an event`,
		`{"kind":"elected","token":"seven"}`,      // malformed: token is a string
		`{"kind":"write"`,                         // malformed: broken JSON
		`{"kind":"teleported"}`,                   // malformed: unknown kind
		`{"kind":"stepped-down","reason":"lost"}`, // no t: stamped on receipt
		"{\"kind\":\"error\",\"reason\":\"" + strings.Repeat("x", 3000) + "\xff\"}",
	}
	for _, l := range lines {
		r.CandidateLine("c1", []byte(l))
	}
	evs := readBack(t, w, path)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
	}
	want := "campaigning elected contract-violation contract-violation contract-violation stepped-down contract-violation"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	for _, e := range evs {
		if e.Node != "c1" {
			t.Errorf("event %d has node %q", e.Seq, e.Node)
		}
		switch e.Kind {
		case history.KindContractViolation:
			if e.Source != history.SourceHarness || e.Reason == "" || e.Line == "" {
				t.Errorf("violation without source/reason/line: %+v", e)
			}
			if len(e.Line) > maxViolationLine+len("…") {
				t.Errorf("line not truncated: %d bytes", len(e.Line))
			}
		}
	}
	if evs[1].Token != 7 || evs[1].Source != history.SourceCandidate {
		t.Errorf("elected event: %+v", evs[1])
	}
	if !evs[5].Stamped {
		t.Errorf("event without t not marked stamped: %+v", evs[5])
	}
	if !strings.Contains(evs[2].Line, `"seven"`) || !strings.Contains(evs[2].Reason, "token") {
		t.Errorf("violation %+v", evs[2])
	}
	if !st.ClockAware("c1") || st.ClockAware("c2") {
		t.Error("clock awareness not tracked")
	}
	if _, _, ok := st.Leader(); ok {
		t.Error("c1 still leader after stepping down")
	}
	if got := st.Snapshot().Counts; got.Elections != 1 || got.ContractViolations != 4 || got.StepDowns != 1 {
		t.Errorf("counts %+v", got)
	}
}

func TestCollectorResourceLines(t *testing.T) {
	r, st, w, path := newTestRecorder(t)
	now := history.Now()
	r.ResourceLine("resource", []byte(fmt.Sprintf(`{"t":%d,"kind":"decision","node":"c1","token":3,"write_id":"c1-1","result":"accepted","max":2,"mode":"fenced"}`, now)))
	r.ResourceLine("resource", []byte(fmt.Sprintf(`{"t":%d,"kind":"decision","node":"c2","token":1,"write_id":"c2-1","result":"rejected","max":3,"stale":true,"mode":"fenced"}`, now)))
	r.ResourceLine("resource", []byte(`listening on :8080`))
	r.ResourceLine("resource", []byte(`{"t":1,"kind":"elected","token":1,"node":"c1"}`))
	r.ResourceLine("resource", []byte(`{"t":1,"kind":"decision","result":"maybe"}`))
	r.ResourceLine("resource", []byte(`{"t":1,"kind":"decision","bogus":1}`))
	evs := readBack(t, w, path)
	if len(evs) != 5 {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	if evs[0].Kind != history.KindDecision || evs[0].Node != "c1" || evs[0].Source != history.SourceResource {
		t.Errorf("decision: %+v", evs[0])
	}
	for _, e := range evs[2:] {
		if e.Kind != history.KindContractViolation || e.Node != "resource" {
			t.Errorf("want violation from resource: %+v", e)
		}
	}
	c := st.Snapshot().Counts
	if c.WritesAccepted != 1 || c.WritesRejected != 1 || c.StaleAccepted != 0 {
		t.Errorf("counts %+v", c)
	}
}

// Many concurrent producers: every line ends up in the history exactly once, in a valid file.
func TestCollectorLosesNothing(t *testing.T) {
	r, st, w, path := newTestRecorder(t)
	const nodes, perNode = 8, 500
	var wg sync.WaitGroup
	for n := 1; n <= nodes; n++ {
		wg.Add(1)
		go func(node string) {
			defer wg.Done()
			for i := 1; i <= perNode; i++ {
				if i%10 == 0 {
					r.CandidateLine(node, []byte(`{"kind":`)) // malformed
					continue
				}
				r.CandidateLine(node, []byte(fmt.Sprintf(`{"kind":"elected","token":%d}`, i)))
			}
		}(fmt.Sprintf("c%d", n))
	}
	wg.Wait()
	evs := readBack(t, w, path)
	if len(evs) != nodes*perNode {
		t.Fatalf("%d events, want %d", len(evs), nodes*perNode)
	}
	var violations int
	for _, e := range evs {
		if e.Kind == history.KindContractViolation {
			violations++
		}
	}
	if violations != nodes*perNode/10 {
		t.Fatalf("%d violations", violations)
	}
	if c := st.Snapshot().Counts; c.Events != nodes*perNode || c.MaxConcurrentLeads != nodes {
		t.Fatalf("counts %+v", c)
	}
	if d, _ := r.Dropped(); d != 0 {
		t.Fatalf("%d dropped", d)
	}
}

func TestRecorderAfterClose(t *testing.T) {
	r, _, w, path := newTestRecorder(t)
	r.CandidateLine("c1", []byte(`{"kind":"campaigning"}`))
	r.Close()
	r.CandidateLine("c1", []byte(`{"kind":"elected","token":1}`)) // late output: ignored, no panic
	evs := readBack(t, w, path)
	if len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
	if d, _ := r.Dropped(); d != 1 {
		t.Fatalf("dropped %d, want 1", d)
	}
}

func TestTruncateLine(t *testing.T) {
	if got := truncateLine([]byte("abc\r\n"), 10); got != "abc" {
		t.Errorf("%q", got)
	}
	got := truncateLine([]byte(strings.Repeat("é", 10)), 5)
	if got != "éé…" {
		t.Errorf("cut inside a rune: %q", got)
	}
	if got := truncateLine([]byte("a\xffb"), 10); got != "a\uFFFDb" {
		t.Errorf("invalid utf-8: %q", got)
	}
}

// A campaigning line the contract rejects (an unknown field) is a violation, and still counts
// as the candidate campaigning for the warmup's wait; other rejected lines do not.
func TestRejectedCampaigningStillEndsTheWaitForIt(t *testing.T) {
	r, st, w, path := newTestRecorder(t)
	r.CandidateLine("c1", []byte(`{"kind":"campaigning","leader":"me"}`))
	r.CandidateLine("c2", []byte(`{"kind":"error","reason":""}`))
	if !st.Campaigned([]string{"c1"}) {
		t.Error("c1's rejected campaigning line did not count")
	}
	if st.Campaigned([]string{"c2"}) {
		t.Error("c2 printed no campaigning line and counts as campaigning")
	}
	evs := readBack(t, w, path)
	if len(evs) != 2 || evs[0].Kind != history.KindContractViolation {
		t.Errorf("the rejected line is not a contract violation: %+v", evs)
	}
}
