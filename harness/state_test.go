package harness

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

func ev(kind history.Kind, node string, token int64) history.Event {
	return history.Event{Kind: kind, Node: node, Token: token}
}

func TestLiveStateLeaders(t *testing.T) {
	s := NewLiveState()
	if _, _, ok := s.Leader(); ok {
		t.Fatal("leader before any election")
	}
	s.Observe(ev(history.KindProcessStart, "c1", 0))
	s.Observe(ev(history.KindElected, "c1", 3))
	s.Observe(ev(history.KindElected, "c2", 5)) // overlap: c1 still believes
	if n, tok, _ := s.Leader(); n != "c2" || tok != 5 {
		t.Fatalf("leader %s %d, want the latest (c2 5)", n, tok)
	}
	if got := s.Leaders(); len(got) != 2 || got[0].Node != "c1" {
		t.Fatalf("leaders %+v", got)
	}
	s.Observe(ev(history.KindSteppedDown, "c2", 0))
	if n, tok, _ := s.Leader(); n != "c1" || tok != 3 {
		t.Fatalf("after c2 stepped down leader is %s %d, want c1 3", n, tok)
	}
	s.Observe(history.Event{Kind: history.KindProcessExit, Node: "c1"})
	if _, _, ok := s.Leader(); ok || s.Running("c1") {
		t.Fatal("a dead process still leads or runs")
	}
	c := s.Snapshot().Counts
	if c.Elections != 2 || c.MaxConcurrentLeads != 2 || c.ProcessExits != 1 {
		t.Fatalf("counts %+v", c)
	}
}

func TestLiveStateFaultsAndWrites(t *testing.T) {
	s := NewLiveState()
	s.Observe(history.Event{Kind: history.KindPhase, Phase: "faults"})
	s.Observe(history.Event{Kind: history.KindFaultStart, FaultID: 2, Fault: "pause", Targets: []string{"c1"}})
	s.Observe(history.Event{Kind: history.KindFaultStart, FaultID: 1, Fault: "partition", Targets: []string{"c2", "etcd-1"}})
	s.Observe(history.Event{Kind: history.KindFaultStart, FaultID: 3, Fault: "clock", Err: "not supported"})
	s.Observe(history.Event{Kind: history.KindDecision, Result: history.ResultAccepted, Stale: true})
	s.Observe(history.Event{Kind: history.KindDecision, Result: history.ResultRejected})
	snap := s.Snapshot()
	if snap.Phase != "faults" || strings.Join(snap.ActiveFaults, ";") != "#1 partition@c2,etcd-1;#2 pause@c1" {
		t.Fatalf("snapshot %+v", snap)
	}
	s.Observe(history.Event{Kind: history.KindFaultEnd, FaultID: 2})
	snap = s.Snapshot()
	if len(snap.ActiveFaults) != 1 || snap.Counts.FaultsFailed != 1 || snap.Counts.StaleAccepted != 1 ||
		snap.Counts.WritesAccepted != 1 || snap.Counts.WritesRejected != 1 {
		t.Fatalf("snapshot %+v", snap)
	}
}

func TestFormatSummary(t *testing.T) {
	o := &Outcome{Verdict: "invalid", Reasons: []string{"invalid: stale write accepted"}, RunDir: "/x",
		Leaders: []string{"c1", "c2"}, Counts: Counts{Elections: 3, WritesAccepted: 5, StaleAccepted: 1}, HealError: "boom"}
	got := FormatSummary(o)
	for _, want := range []string{"elections: 3 (leaders: c1, c2)", "5 accepted (1 stale)", "HEAL FAILED: boom", "verdict: INVALID", "- invalid: stale write accepted", "run dir: /x"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	// A valid run's findings show too, capped.
	o = &Outcome{Verdict: "valid", RunDir: "/x", Findings: make([]string, maxSummaryFindings+3)}
	o.Findings[0] = "belief overlap of 4.5s: c1, c2"
	got = FormatSummary(o)
	for _, want := range []string{"verdict: VALID", "findings (not part of the verdict): 13", "- belief overlap of 4.5s: c1, c2", "3 more in results.json"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

func TestIsStaticELF(t *testing.T) {
	exe, err := os.Executable() // the test binary: static or not depends on CGO, so only check scripts
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(exe)
	_ = isStaticELF(b)
	if isStaticELF([]byte("#!/bin/sh\n")) {
		t.Error("a script is not a static ELF")
	}
	if sh, err := os.ReadFile("/bin/sh"); err == nil && isStaticELF(sh) {
		t.Error("/bin/sh is dynamically linked on Debian")
	}
}

func TestShellQuote(t *testing.T) {
	cases := map[string]string{"pause-leader": "pause-leader", "pause:target=leader,for=6s": "pause:target=leader,for=6s",
		"a; b": "'a; b'", "it's": `'it'\''s'`, "": "''"}
	for in, want := range cases {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// binaryInit is when this test binary initialised: the chaos build runs for many minutes
// before this unit test gets its turn, so "now" says little about the process's start.
var binaryInit = history.Now()

func TestParseStartTime(t *testing.T) {
	// Our own process: started before the binary initialised, and not long before.
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseStartTime(b)
	if err != nil {
		t.Fatal(err)
	}
	if st > binaryInit || binaryInit-st > int64(time.Minute) {
		t.Fatalf("start %d, binary initialised at %d: want the start at most a minute before", st, binaryInit)
	}
	// A command name with spaces and ')' must not shift the fields.
	line := []byte("123 (a) b) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 500 20")
	if _, err := parseStartTime(line); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 zz"} {
		if _, err := parseStartTime([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
