package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// writeRun writes a run directory whose history is built by fill; it returns the directory.
func writeRun(t *testing.T, fill func(add func(history.Event))) string {
	t.Helper()
	dir := t.TempDir()
	w, err := history.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	source := map[history.Kind]history.Source{
		history.KindCampaigning: history.SourceCandidate, history.KindElected: history.SourceCandidate,
		history.KindWrite: history.SourceCandidate, history.KindSteppedDown: history.SourceCandidate,
		history.KindDecision: history.SourceResource, history.KindRunStart: history.SourceHarness,
		history.KindRunEnd: history.SourceHarness,
	}
	fill(func(e history.Event) {
		e.Source = source[e.Kind]
		if _, err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

const msNs = int64(1_000_000)

// leaderRun: c1 leads and writes; with second, c2 is also elected (token 2) while c1 still
// believes it leads (a belief overlap the fence handles); with stale, the unfenced resource
// accepts c1's token-1 write after c2's token-2 write.
func leaderRun(second, stale, runEnd bool) func(add func(history.Event)) {
	return func(add func(history.Event)) {
		t := 1000 * msNs
		add(history.Event{Kind: history.KindRunStart, T: t})
		add(history.Event{Kind: history.KindCampaigning, Node: "c1", T: t + msNs})
		add(history.Event{Kind: history.KindElected, Node: "c1", Token: 1, T: t + 2*msNs})
		maxTok := int64(0)
		write := func(at int64, node string, tok int64, id string) {
			res, mode := history.ResultAccepted, "fenced"
			if stale {
				mode = "unfenced"
			}
			if tok < maxTok && !stale {
				res = history.ResultRejected
			}
			add(history.Event{Kind: history.KindDecision, Node: node, Token: tok, WriteID: id, Result: res, Max: maxTok,
				Stale: tok < maxTok, Mode: mode, T: at})
			add(history.Event{Kind: history.KindWrite, Node: node, Token: tok, WriteID: id, CallT: at - msNs/2, Result: res, T: at + msNs/2})
			if res == history.ResultAccepted {
				maxTok = max(maxTok, tok)
			}
		}
		for i := int64(0); i < 10; i++ {
			write(t+(10+10*i)*msNs, "c1", 1, "a"+string(rune('0'+i)))
		}
		if second {
			add(history.Event{Kind: history.KindCampaigning, Node: "c2", T: t + 110*msNs})
			add(history.Event{Kind: history.KindElected, Node: "c2", Token: 2, T: t + 120*msNs})
			write(t+130*msNs, "c2", 2, "b0")
			write(t+140*msNs, "c1", 1, "a-late")
			add(history.Event{Kind: history.KindSteppedDown, Node: "c1", Reason: "lease-lost", T: t + 150*msNs})
			write(t+160*msNs, "c2", 2, "b1")
		}
		if runEnd {
			add(history.Event{Kind: history.KindRunEnd, T: t + 200*msNs})
		}
	}
}

func TestCheckExitCodes(t *testing.T) {
	garbage := t.TempDir()
	if err := os.WriteFile(filepath.Join(garbage, "history.jsonl"), []byte("{\"v\":1,\"seq\":1}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		dir  string
		args []string
		want int
	}{
		{"valid", writeRun(t, leaderRun(false, false, true)), nil, 0},
		{"overlap fenced is valid", writeRun(t, leaderRun(true, false, true)), nil, 0},
		{"overlap under --require exclusive", writeRun(t, leaderRun(true, false, true)), []string{"--require", "exclusive"}, 1},
		{"stale write accepted", writeRun(t, leaderRun(true, true, true)), nil, 1},
		{"no run-end", writeRun(t, leaderRun(false, false, false)), nil, 2},
		{"unreadable history", garbage, nil, exitHarness},
		{"bad --require", writeRun(t, leaderRun(false, false, true)), []string{"--require", "fast"}, exitUsage},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			code, err := runCheck(context.Background(), append([]string{c.dir}, c.args...), &out, io.Discard)
			if code != c.want {
				t.Fatalf("exit %d (err %v), want %d; output:\n%s", code, err, c.want, out.String())
			}
			if c.want <= 2 {
				if _, err := os.Stat(filepath.Join(c.dir, "results.json")); err != nil {
					t.Errorf("results.json not written: %v", err)
				}
			}
		})
	}
}
