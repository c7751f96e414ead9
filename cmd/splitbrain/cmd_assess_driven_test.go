package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/assess"
	"github.com/splitbrain-chaos/splitbrain/assess/assessproto"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/reports"
)

// --driven --list prints the plan as one event, as splitbraintest.Plan reads it; bad flags
// are still exit 64 on stderr, which splitbraintest quotes.
func TestAssessDrivenList(t *testing.T) {
	var out, errb bytes.Buffer
	code := runMain([]string{"assess", "--driven", "--list", "--store", "redis", "--recipe", "redis-setnx", "--checks", "handoff,kill-leader", "--out", t.TempDir()}, &out, &errb)
	if code != exitValid {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	ev, err := assessproto.Parse(bytes.TrimSpace(out.Bytes()))
	if err != nil || ev.Event != assessproto.Plan || len(ev.Checks) != 2 || ev.Checks[0].Name != "handoff" || ev.Checks[1].Name != "kill-leader" || ev.Budget != assess.DefaultBudget {
		t.Errorf("plan event %+v (%v), want handoff and kill-leader, the default budget:\n%s", ev, err, out.String())
	}
	out.Reset()
	errb.Reset()
	if code := runMain([]string{"assess", "--driven", "--store", "redis", "--recipe", "redis-setnx", "--checks", "nope"}, &out, &errb); code != exitUsage || out.Len() != 0 || !strings.Contains(errb.String(), "nope") {
		t.Errorf("an unknown check: exit %d, stdout %q, stderr %q; want 64, nothing, the name", code, out.String(), errb.String())
	}
}

// A preflight failure (a candidate that is not there) is one fatal event and exit 255, before
// any session starts.
func TestAssessDrivenFatal(t *testing.T) {
	var out bytes.Buffer
	o := assess.Options{Store: "etcd", CandidateCmd: []string{"/nonexistent/candidate"}, OutDir: t.TempDir()}
	code, err := runAssessDriven(context.Background(), o, nil, false, strings.NewReader(""), &out)
	if code != exitHarness || err != nil {
		t.Fatalf("exit %d, %v", code, err)
	}
	ev, perr := assessproto.Parse(bytes.TrimSpace(out.Bytes()))
	if perr != nil || ev.Event != assessproto.Fatal || ev.Stage != "session" || !strings.Contains(ev.Error, "/nonexistent/candidate") {
		t.Errorf("event %+v (%v), want a fatal session event naming the candidate:\n%s", ev, perr, out.String())
	}
}

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		line, err string
	}{
		{"budget 5m0s", ""}, {"check handoff", ""}, {"cancel", ""}, {"close", ""},
		{"budget -1s", "positive"}, {"budget x", "DURATION"}, {"check", "NAME"}, {"close now", "no argument"}, {"run handoff", "unknown command"},
	} {
		_, err := assessproto.ParseCommand(tc.line)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %v, want an error saying %q", tc.line, err, tc.err)
		}
	}
}

// splitbraintest spells these names of packages it must not link (assess/assessproto).
func TestAssessprotoNamesAgree(t *testing.T) {
	for _, p := range [][2]string{{assessproto.EnvBinary, images.EnvBinary}, {assessproto.EnvProfile, images.EnvProfile}, {assessproto.ReportFile, reports.ReportFile}} {
		if p[0] != p[1] {
			t.Errorf("assess/assessproto says %q, its package %q", p[0], p[1])
		}
	}
}
