package main

import (
	"bytes"
	"sort"
	"strings"
	"testing"
)

// TestFlagValueNamesAreOneWord: the flag package takes a `quoted` word of a usage text as
// the flag's value name, so a backquoted command in a usage ("`splitbrain report --merge`")
// showed as "-shard splitbrain report --merge" in --help.
func TestFlagValueNamesAreOneWord(t *testing.T) {
	var names []string
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	cmds := [][]string{{"candidate", "check"}, {"nemesis", "plan"}, {"images", "build"}}
	for _, n := range names {
		cmds = append(cmds, []string{n})
	}
	for _, c := range cmds {
		var stdout, stderr bytes.Buffer
		runMain(append(c, "--help"), &stdout, &stderr)
		for _, line := range strings.Split(stdout.String()+stderr.String(), "\n") {
			if !strings.HasPrefix(line, "  -") {
				continue
			}
			head, _, _ := strings.Cut(line, "\t") // a short flag's usage follows a tab
			if f := strings.Fields(head); len(f) > 2 {
				t.Errorf("splitbrain %s --help: %q: the value name has spaces (a backquoted phrase in the usage text)", strings.Join(c, " "), strings.TrimSpace(head))
			}
		}
	}
}
