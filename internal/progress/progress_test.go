package progress

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func status(phase string, elapsed time.Duration) Status {
	return Status{Phase: phase, Elapsed: elapsed, Total: time.Minute, Leaders: []Leader{{"c1", 7}}, ActiveFaults: []string{"#2 pause@c1"},
		Elections: 3, WritesAccepted: 120, WritesRejected: 4}
}

func TestProgressPlainThrottles(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, ProgressAuto) // a buffer is not a terminal: plain lines
	clk := &fakeClock{time.Unix(0, 0)}
	p.now = clk.now
	for i := 0; i < 50; i++ { // 10 s of updates every 200 ms
		p.Update(status("faults", time.Duration(i)*200*time.Millisecond))
		clk.t = clk.t.Add(200 * time.Millisecond)
	}
	p.Update(status("heal", 10*time.Second)) // a new phase shows at once
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (t=0, t=5s, phase change):\n%s", len(lines), buf.String())
	}
	if strings.Contains(buf.String(), "\r") || strings.Contains(buf.String(), "\x1b") {
		t.Error("plain output carries terminal control characters")
	}
	for _, want := range []string{"faults 0:00/1:00", "leader c1/7", "#2 pause@c1", "elections 3", "writes 120 ok 4 rejected"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("line %q lacks %q", lines[0], want)
		}
	}
}

func TestProgressTerminalRedraws(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, ProgressAuto)
	p.tty, p.width = true, func() int { return 40 }
	clk := &fakeClock{time.Unix(0, 0)}
	p.now = clk.now
	p.Update(status("faults", time.Second))
	clk.t = clk.t.Add(time.Second)
	s := status("faults", 2*time.Second)
	s.Leaders = append(s.Leaders, Leader{"c2", 8})
	p.Update(s)
	p.Summary("verdict: VALID", nil)
	out := buf.String()
	if strings.Count(out, "\r\x1b[2K") != 3 || strings.Count(out, "\n") != 1 {
		t.Fatalf("want two redraws, one clear and one summary line: %q", out)
	}
	for _, seg := range strings.Split(out, "\r\x1b[2K") {
		if n := len([]rune(strings.TrimSuffix(seg, "\n"))); n > 39 {
			t.Errorf("status line of %d runes is wider than the 40-column terminal: %q", n, seg)
		}
	}
}

func TestProgressQuietAndJSON(t *testing.T) {
	var q bytes.Buffer
	p := NewProgress(&q, ProgressQuiet)
	p.Update(status("faults", time.Second))
	p.Event("fault", "pause c1", nil)
	p.Summary("verdict: INVALID\n", nil)
	if q.String() != "verdict: INVALID\n" {
		t.Fatalf("quiet printed %q", q.String())
	}

	var j bytes.Buffer
	p = NewProgress(&j, ProgressJSON)
	p.Update(status("faults", time.Second))
	p.Event("fault-start", "pause c1", map[string]any{"fault_id": 2})
	p.Summary("verdict: INVALID", map[string]any{"verdict": "invalid"})
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(j.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		types = append(types, m["type"].(string))
		if m["type"] == "status" && (m["phase"] != "faults" || m["writes_accepted"].(float64) != 120) {
			t.Errorf("status event %v", m)
		}
	}
	if strings.Join(types, ",") != "status,fault-start,summary" {
		t.Fatalf("event types %v", types)
	}
	if _, err := ParseProgressMode(true, true); err == nil {
		t.Error("--quiet with --json must be refused")
	}
}
