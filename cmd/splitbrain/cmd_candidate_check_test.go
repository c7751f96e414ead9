package main

import (
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/checkers/lint"
)

// candidate check quotes the candidate's lines: an escape in them reaches the terminal escaped.
func TestCandidateCheckProblemsEscaped(t *testing.T) {
	line := `{"kind":"error","reason":"raw ESC in a { line ` + "\x1b[31m\x1b]0;PWNED\x07\u202e" + `"}`
	got := problemsText([]lint.Problem{{Rule: "R1", Code: "bad-json", Nodes: []string{"c1"}, Count: 1, What: "malformed: " + line, Fix: "print JSON", Example: line}})
	if strings.ContainsAny(got, "\x1b\x07\u202e") || !strings.Contains(got, `\x1b[31m`) {
		t.Fatalf("lint report for the terminal: %q", got)
	}
}
