package reports

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// bigRun writes a ~1,000,000-event run: 10 candidates, 10,000 tenures of 49 writes each
// (decision + write events), a pause fault every 100 tenures with a rejected zombie write.
func bigRun(b *testing.B, dir string) int { return bigRunMode(b, dir, "fenced") }

// bigRunMode is bigRun with the resource mode: "unfenced" accepts the zombie writes, so the
// run is invalid and the report carries explanations.
func bigRunMode(b *testing.B, dir, mode string) int {
	b.Helper()
	var ev []history.Event
	add := func(e history.Event) {
		e.V, e.Seq, e.Source = history.Version, int64(len(ev)+1), sourceOf[e.Kind]
		ev = append(ev, e)
	}
	t := int64(time.Second)
	var maxTok int64
	wid := 0
	decide := func(at int64, node string, tok int64) {
		wid++
		id := fmt.Sprintf("w%d", wid)
		res := history.ResultAccepted
		if tok < maxTok && mode == "fenced" {
			res = history.ResultRejected
		}
		add(history.Event{T: at, Kind: history.KindDecision, Node: node, Token: tok, WriteID: id, Result: res, Max: maxTok, Stale: tok < maxTok, Mode: mode})
		add(history.Event{T: at + ms/2, Kind: history.KindWrite, Node: node, Token: tok, WriteID: id, CallT: at - ms/2, Result: res})
		if res == history.ResultAccepted {
			maxTok = max(maxTok, tok)
		}
	}
	add(history.Event{T: t, Kind: history.KindRunStart})
	add(history.Event{T: t, Kind: history.KindPhase, Phase: history.PhaseFaults})
	for k := 0; k < 10000; k++ {
		node := fmt.Sprintf("c%d", k%10+1)
		tok := int64(2*k + 1)
		add(history.Event{T: t, Kind: history.KindCampaigning, Node: node})
		t += ms
		add(history.Event{T: t, Kind: history.KindElected, Node: node, Token: tok})
		for w := 0; w < 49; w++ {
			decide(t+int64(w)*50*ms+ms, node, tok)
		}
		t += 49 * 50 * ms
		if k%100 == 99 {
			fid := k/100 + 1
			next := fmt.Sprintf("c%d", (k+1)%10+1)
			add(history.Event{T: t, Kind: history.KindFaultStart, FaultID: fid, Fault: "pause", Targets: []string{node}})
			add(history.Event{T: t + ms, Kind: history.KindCampaigning, Node: next})
			add(history.Event{T: t + 2*ms, Kind: history.KindElected, Node: next, Token: tok + 1})
			decide(t+3*ms, next, tok+1)
			add(history.Event{T: t + 5*ms, Kind: history.KindFaultEnd, FaultID: fid})
			add(history.Event{T: t + 6*ms, Kind: history.KindSteppedDown, Node: next, Reason: "resign"})
			decide(t+7*ms, node, tok)
			t += 9 * ms
		}
		add(history.Event{T: t, Kind: history.KindSteppedDown, Node: node, Reason: "resign"})
		t += ms
	}
	add(history.Event{T: t, Kind: history.KindPhase, Phase: history.PhaseTeardown})
	add(history.Event{T: t + ms, Kind: history.KindRunEnd})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	writeHistory(b, dir, ev)
	res, err := checkers.Check(context.Background(), ev, checkers.Params{PorcupineTimeout: -1, ResourceMode: mode})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := WriteResults(dir, res); err != nil {
		b.Fatal(err)
	}
	return len(ev)
}

// BenchmarkRenderRunMillion renders report.html + junit.xml for a 1,000,000-event run.
func BenchmarkRenderRunMillion(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "big")
	if keep := os.Getenv("SPLITBRAIN_KEEP_FIXTURE"); keep != "" { // to time `splitbrain report` on it
		dir = filepath.Join(keep, "big")
	}
	n := bigRun(b, dir)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := RenderRun(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st, err := os.Stat(filepath.Join(dir, ReportFile))
	if err != nil {
		b.Fatal(err)
	}
	hs, _ := os.Stat(filepath.Join(dir, HistoryFile))
	b.ReportMetric(float64(st.Size())/1e6, "report-MB")
	b.ReportMetric(float64(n), "events")
	b.Logf("%d events, history %.1f MB → report.html %.2f MB", n, float64(hs.Size())/1e6, float64(st.Size())/1e6)
}

// BenchmarkRenderRunMillionInvalid: the same run with the zombie writes accepted
// (unfenced), so report.html opens with explanations and their zoomed timelines.
func BenchmarkRenderRunMillionInvalid(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "big-invalid")
	n := bigRunMode(b, dir, "unfenced")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := RenderRun(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	page, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`id="why-stale-write-accepted"`)) {
		b.Fatal("the invalid 1M-event report has no stale-write explanation")
	}
	b.ReportMetric(float64(len(page))/1e6, "report-MB")
	b.ReportMetric(float64(n), "events")
}

// BenchmarkRenderRunSmall: the fixture run (~600 events), the common case.
func BenchmarkRenderRunSmall(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "small")
	writeRun(b, dir, defaultFixture())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := RenderRun(dir); err != nil {
			b.Fatal(err)
		}
	}
}
