package progress

import (
	"strings"
	"testing"
	"time"
)

// Candidate output must not act on the operator's terminal (issue 14 item 8).
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\n\twith tab":   "plain text\n\twith tab",
		"red \x1b[31mALERT\x1b[0m": `red \x1b[31mALERT\x1b[0m`,
		"over\rwrite":              `over\x0dwrite`,
		"title \x1b]0;pwned\x07":   `title \x1b]0;pwned\x07`,
		"c1\u202e":                 `c1\u202e`,
		"bad \xff byte":            `bad \xff byte`,
		"C1 \u009b31m":             `C1 \u009b31m`,
		"ünïcode ✓":                "ünïcode ✓",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// Elapsed never exceeds the total; untimed phases show their own duration only.
func TestStatusLineElapsedWithinTotal(t *testing.T) {
	over := Status{Phase: "recovery", Elapsed: 46 * time.Second, Total: 45 * time.Second}
	if l := over.Line(); !strings.HasPrefix(l, "recovery 0:45/0:45 ") {
		t.Errorf("%q", l)
	}
	td := Status{Phase: "teardown", Elapsed: 3 * time.Second}
	if l := td.Line(); !strings.HasPrefix(l, "teardown 0:03 |") {
		t.Errorf("%q", l)
	}
}
