package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWriterReaderRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	in := []Event{
		{T: 10, Source: SourceHarness, Kind: KindPhase, Phase: PhaseWarmup},
		{T: 20, Source: SourceCandidate, Kind: KindElected, Node: "c1", Token: 7},
		{T: 30, Source: SourceCandidate, Kind: KindWrite, Node: "c1", Token: 7, WriteID: "c1-1", CallT: 25, Result: ResultAccepted},
		{T: 28, Source: SourceResource, Kind: KindDecision, Node: "c1", Token: 7, WriteID: "c1-1", Result: ResultAccepted, Mode: "fenced"},
		{T: 40, Source: SourceNemesis, Kind: KindFaultStart, FaultID: 1, Fault: "pause", Targets: []string{"c1"}},
	}
	for _, e := range in {
		if _, err := w.Append(e); err != nil {
			t.Fatalf("append %v: %v", e.Kind, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, info, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.TruncatedTail {
		t.Fatal("clean file reported a truncated tail")
	}
	if len(out) != len(in) {
		t.Fatalf("read %d events, wrote %d", len(out), len(in))
	}
	for i, e := range out {
		if e.Seq != int64(i+1) || e.V != Version || e.Kind != in[i].Kind || e.T != in[i].T {
			t.Errorf("event %d = %+v, want kind %s t %d seq %d", i, e, in[i].Kind, in[i].T, i+1)
		}
	}
	if out[4].Targets[0] != "c1" {
		t.Errorf("targets lost: %+v", out[4])
	}
}

func TestAppendStampsMissingTime(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "h.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := Now()
	e, err := w.Append(Event{Source: SourceHarness, Kind: KindRunStart})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Stamped || e.T < before {
		t.Fatalf("want stamped event at >= %d, got %+v", before, e)
	}
}

func TestAppendRefusesInvalidWithoutLosingSeq(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "h.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Append(Event{T: 1, Source: SourceCandidate, Kind: KindElected}); err == nil {
		t.Fatal("elected without node accepted")
	}
	e, err := w.Append(Event{T: 2, Source: SourceHarness, Kind: KindRunStart})
	if err != nil {
		t.Fatal(err)
	}
	if e.Seq != 1 {
		t.Fatalf("seq after a refused event = %d, want 1", e.Seq)
	}
}

func TestConcurrentAppendsKeepSeqOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				if _, err := w.Append(Event{T: 1, Source: SourceCandidate, Kind: KindCampaigning, Node: "c1"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, _, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4000 {
		t.Fatalf("got %d events, want 4000", len(evs))
	}
}

func TestReaderErrorsNameLineAndProblem(t *testing.T) {
	good := `{"v":1,"seq":1,"t":5,"src":"harness","kind":"run-start"}`
	cases := []struct {
		name, body, want string
	}{
		{"not json", good + "\nhello\n", "line 2"},
		{"unknown kind", `{"v":1,"seq":1,"t":5,"src":"harness","kind":"explode"}` + "\n", `unknown kind "explode"`},
		{"wrong source", `{"v":1,"seq":1,"t":5,"src":"candidate","kind":"run-start"}` + "\n", `must come from source "harness"`},
		{"future version", `{"v":9,"seq":1,"t":5,"src":"harness","kind":"run-start"}` + "\n", "schema version 9"},
		{"unknown field", `{"v":1,"seq":1,"t":5,"src":"harness","kind":"run-start","bogus":1}` + "\n", "unknown field"},
		{"seq goes back", good + "\n" + good + "\n", "does not follow"},
		{"no time", `{"v":1,"seq":1,"src":"harness","kind":"run-start"}` + "\n", "no timestamp"},
		{"write without call", `{"v":1,"seq":1,"t":5,"src":"candidate","kind":"write","node":"c1","write_id":"a","result":"accepted"}` + "\n", "call_t"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Read(strings.NewReader(c.body), "h.jsonl")
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("want ParseError, got %v", err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "h.jsonl") {
				t.Fatalf("error %q does not name %q and the file", err, c.want)
			}
		})
	}
}

func TestReaderKeepsEverythingBeforeATruncatedTail(t *testing.T) {
	body := `{"v":1,"seq":1,"t":5,"src":"harness","kind":"run-start"}` + "\n" + `{"v":1,"seq":2,"t":6,"src":"har`
	evs, info, err := Read(strings.NewReader(body), "h")
	if err != nil {
		t.Fatal(err)
	}
	if !info.TruncatedTail || len(evs) != 1 {
		t.Fatalf("want 1 event and a truncated tail, got %d, %+v", len(evs), info)
	}
	// A complete but malformed last line is an error, not a truncation.
	_, _, err = Read(strings.NewReader(body+"\n"), "h")
	if err == nil {
		t.Fatal("malformed complete last line accepted")
	}
}

func TestFlushHappensWithoutClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Append(Event{T: 1, Source: SourceHarness, Kind: KindRunStart}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"run-start"`) {
		t.Fatalf("flushed file lacks the event: %q", b)
	}
}
