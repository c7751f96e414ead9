package main

import (
	"bytes"
	"fmt"
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
	fill(func(e history.Event) {
		e.Source = history.SourceOf(e.Kind)
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

// runShape says what goes wrong in a hand-made run (zero value: a clean fenced run).
type runShape struct {
	second      bool   // c2 is elected (token 2) while c1 still believes it leads
	stale       bool   // the resource is unfenced and accepts c1's token-1 write after c2's token 2
	noRunEnd    bool   // the history is cut off
	endReason   string // run-end reason (cancelled, harness error)
	faultErr    string // the pause did not apply (fault-start error)
	healErr     string // its undo failed (fault-end error)
	noDecisions bool   // the resource logged nothing: every write unknown
	lateElected bool   // c1 (token 1) is paused between grant and printing elected; c2 (token 2) announces first
}

// leaderRun: warmup with c1 leading and writing, a pause fault on c1 (100–150 ms), writes
// after the heal, run-end. The shape's fields each break one thing.
func leaderRun(s runShape) func(add func(history.Event)) {
	return func(add func(history.Event)) {
		t := 1000 * msNs
		at := func(ms int64) int64 { return t + ms*msNs }
		maxTok := int64(0)
		wid := 0
		write := func(ms int64, node string, tok int64) {
			wid++
			id := fmt.Sprintf("w%d", wid)
			res, mode := history.ResultAccepted, "fenced"
			if s.stale {
				mode = "unfenced"
			}
			if tok < maxTok && !s.stale {
				res = history.ResultRejected
			}
			if s.noDecisions {
				add(history.Event{Kind: history.KindWrite, Node: node, Token: tok, WriteID: id, CallT: at(ms), Result: history.ResultUnknown, T: at(ms) + msNs})
				return
			}
			add(history.Event{Kind: history.KindDecision, Node: node, Token: tok, WriteID: id, Result: res, Max: maxTok, Stale: tok < maxTok, Mode: mode, T: at(ms) + msNs/2})
			add(history.Event{Kind: history.KindWrite, Node: node, Token: tok, WriteID: id, CallT: at(ms), Result: res, T: at(ms) + msNs})
			if res == history.ResultAccepted {
				maxTok = max(maxTok, tok)
			}
		}
		add(history.Event{Kind: history.KindRunStart, T: at(0)})
		add(history.Event{Kind: history.KindPhase, Phase: history.PhaseWarmup, T: at(0)})
		add(history.Event{Kind: history.KindCampaigning, Node: "c1", T: at(1)})
		add(history.Event{Kind: history.KindCampaigning, Node: "c2", T: at(1)})
		if s.lateElected {
			// c3 leads with token 1 and resigns at 40 ms. c1's acquire (sent at 41 ms) wins token 2;
			// c1 is paused before printing elected. c2's acquire, sent at 100 ms once c1's lease
			// expired, wins token 3 and announces at 101 ms; c1 wakes at 160 ms, prints elected,
			// fails its lease check and steps down without writing.
			add(history.Event{Kind: history.KindElected, Node: "c3", Token: 1, CallT: at(1), T: at(2)})
			for ms := int64(10); ms < 40; ms += 10 {
				write(ms, "c3", 1)
			}
			add(history.Event{Kind: history.KindSteppedDown, Node: "c3", Reason: "resign", T: at(40)})
			add(history.Event{Kind: history.KindPhase, Phase: history.PhaseFaults, T: at(41)})
			add(history.Event{Kind: history.KindFaultStart, FaultID: 1, Fault: "pause", Targets: []string{"c1"}, T: at(42)})
			add(history.Event{Kind: history.KindElected, Node: "c2", Token: 3, CallT: at(100), T: at(101)})
			for ms := int64(110); ms < 160; ms += 10 {
				write(ms, "c2", 3)
			}
			add(history.Event{Kind: history.KindFaultEnd, FaultID: 1, T: at(159)})
			add(history.Event{Kind: history.KindElected, Node: "c1", Token: 2, CallT: at(41), T: at(160)})
			add(history.Event{Kind: history.KindSteppedDown, Node: "c1", Reason: "lease expired", T: at(161)})
			for ms := int64(170); ms < 200; ms += 10 {
				write(ms, "c2", 3)
			}
			add(history.Event{Kind: history.KindPhase, Phase: history.PhaseTeardown, T: at(200)})
			add(history.Event{Kind: history.KindRunEnd, T: at(210)})
			return
		}
		add(history.Event{Kind: history.KindElected, Node: "c1", Token: 1, CallT: at(1), T: at(2)})
		for ms := int64(10); ms < 100; ms += 10 {
			write(ms, "c1", 1)
		}
		add(history.Event{Kind: history.KindPhase, Phase: history.PhaseFaults, T: at(99)})
		add(history.Event{Kind: history.KindFaultStart, FaultID: 1, Fault: "pause", Targets: []string{"c1"}, Err: s.faultErr, T: at(100)})
		if s.second {
			add(history.Event{Kind: history.KindElected, Node: "c2", Token: 2, CallT: at(105), T: at(110)})
			write(120, "c2", 2)
		}
		add(history.Event{Kind: history.KindFaultEnd, FaultID: 1, Err: s.healErr, T: at(150)})
		if s.second {
			write(151, "c1", 1) // the zombie wakes up
			add(history.Event{Kind: history.KindSteppedDown, Node: "c1", Reason: "lease-lost", T: at(155)})
			for ms := int64(160); ms < 200; ms += 10 {
				write(ms, "c2", 2)
			}
		} else {
			for ms := int64(160); ms < 200; ms += 10 {
				write(ms, "c1", 1)
			}
		}
		add(history.Event{Kind: history.KindPhase, Phase: history.PhaseTeardown, T: at(200)})
		if !s.noRunEnd {
			add(history.Event{Kind: history.KindRunEnd, Reason: s.endReason, T: at(210)})
		}
	}
}

// TestCheckExitCodes: hand-made run directories get the verdict the evidence supports,
// through the CLI (issue 13's "done when" list), and check writes nothing unless --write.
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
		code string // a reason code the output must name
	}{
		{"clean", writeRun(t, leaderRun(runShape{})), nil, 0, ""},
		{"overlap fenced is valid", writeRun(t, leaderRun(runShape{second: true})), nil, 0, ""},
		{"overlap under --require exclusive", writeRun(t, leaderRun(runShape{second: true})), []string{"--require", "exclusive"}, 1, "leader-overlap"},
		{"stale write accepted", writeRun(t, leaderRun(runShape{second: true, stale: true})), nil, 1, "stale-write-accepted"},
		{"stale write accepted in a cancelled run stays invalid", writeRun(t, leaderRun(runShape{second: true, stale: true, endReason: "cancelled: interrupt"})), nil, 1, "stale-write-accepted"},
		{"cancelled", writeRun(t, leaderRun(runShape{endReason: "cancelled: interrupt"})), nil, 2, "run-incomplete"},
		{"no run-end", writeRun(t, leaderRun(runShape{noRunEnd: true})), nil, 2, "no-run-end"},
		{"no fault applied", writeRun(t, leaderRun(runShape{faultErr: "host pid: permission denied"})), nil, 2, "nothing-faulted"},
		{"partial apply with failed undo", writeRun(t, leaderRun(runShape{faultErr: "c3: no such process", healErr: "SIGCONT c1: operation not permitted"})), nil, 2, "heal-failed"},
		{"no decision", writeRun(t, leaderRun(runShape{noDecisions: true})), nil, 2, "nothing-tested"},
		{"late elected with call_t of a correct recipe", writeRun(t, leaderRun(runShape{lateElected: true})), nil, 0, ""},
		{"unreadable history", garbage, nil, exitHarness, ""},
		{"bad --require", writeRun(t, leaderRun(runShape{})), []string{"--require", "fast"}, exitUsage, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runMain(append([]string{"check", c.dir}, c.args...), &out, &errOut)
			if code != c.want {
				t.Fatalf("exit %d, want %d; output:\n%s%s", code, c.want, out.String(), errOut.String())
			}
			if _, err := os.Stat(filepath.Join(c.dir, "results.json")); err == nil {
				t.Fatal("check without --write wrote results.json")
			}
			if c.want > 2 {
				return
			}
			var js bytes.Buffer
			if code := runMain(append([]string{"check", c.dir, "--json", "--write"}, c.args...), &js, &errOut); code != c.want {
				t.Fatalf("--write: exit %d, want %d", code, c.want)
			}
			if c.code != "" && !strings.Contains(js.String(), `"code": "`+c.code+`"`) {
				t.Fatalf("results lack reason %s:\n%s", c.code, js.String())
			}
			if _, err := os.Stat(filepath.Join(c.dir, "results.json")); err != nil {
				t.Fatalf("--write did not write results.json: %v", err)
			}
		})
	}
}
