package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestMatrixListShowsFaultsAsRun: --list -v writes out every row's faults and phase end, so a
// row named after a profile shows the trigger it fires on; the summary counts rows by pacing.
func TestMatrixListShowsFaultsAsRun(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"matrix", "--list", "--tags", "default", "--filter", "^etcd/etcd-election/pause-leader$", "-v"}, &out, &errb); code != exitValid {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := out.String()
	for _, want := range []string{"triggered: pause:target=leader,on=", "ends until faults (timeout", "1 rows (1 triggered)"} {
		if !strings.Contains(got, want) {
			t.Errorf("listing lacks %q:\n%s", want, got)
		}
	}
	out.Reset()
	if code := runMain([]string{"matrix", "--list", "--tags", "nightly"}, &out, &errb); code != exitValid {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// Every nightly row is placed on events or states its miss (suite's TestPacingAsListed):
	// the count names the kinds there are and none that is time-tabled.
	if tail := lastLines(out.String(), 2); !strings.Contains(tail, " triggered, ") || !strings.Contains(tail, " statistical") ||
		strings.Contains(tail, "time-tabled") || !strings.Contains(tail, "add -v") {
		t.Errorf("nightly listing should count its rows by pacing, with no time-tabled one, and point at -v:\n%s", tail)
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
