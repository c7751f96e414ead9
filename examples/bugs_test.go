package examples

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/suite"
)

// referenceLine is the public reference every published-bug entry names in its header comment.
var referenceLine = regexp.MustCompile(`(?m)^// Reference: .*https://`)

// TestPublishedBugEntries checks the published bugs (examples/bugs, issue 36) without
// running it: every entry names its public reference, is built buggy or fixed from one source
// by the buggy tag, has a nightly matrix row for each build under the same schedule (buggy
// expected invalid, fixed valid), and is listed in docs/findings.md.
func TestPublishedBugEntries(t *testing.T) {
	dirs, err := os.ReadDir("bugs")
	if err != nil {
		t.Fatal(err)
	}
	m, err := suite.Load("../suite/matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	findings, err := os.ReadFile("../docs/findings.md")
	if err != nil {
		t.Fatal(err)
	}
	entries := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "internal" {
			continue
		}
		entries++
		name, pkg := d.Name(), "examples/bugs/"+d.Name()
		t.Run(name, func(t *testing.T) {
			read := func(file string) string {
				b, err := os.ReadFile(filepath.Join("bugs", name, file))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			if !referenceLine.MatchString(read("main.go")) {
				t.Errorf("%s/main.go: the header has no \"// Reference: https://...\" line", pkg)
			}
			if !strings.HasPrefix(read("buggy.go"), "//go:build buggy\n") || !strings.HasPrefix(read("fixed.go"), "//go:build !buggy\n") {
				t.Errorf("%s: buggy.go must be built by -tags buggy and fixed.go without it", pkg)
			}
			var buggy, fixed []suite.Row
			for _, r := range m.Rows {
				if r.Candidate != pkg {
					continue
				}
				if slices.Contains(r.BuildTags, "buggy") {
					buggy = append(buggy, r)
				} else {
					fixed = append(fixed, r)
				}
			}
			if len(buggy) != 1 || len(fixed) != 1 {
				t.Fatalf("suite/matrix.yaml: want one row of candidate %s with build_tags [buggy] and one without, got %d and %d", pkg, len(buggy), len(fixed))
			}
			b, f := buggy[0], fixed[0]
			if b.Expect.Verdict != "invalid" || f.Expect.Verdict != "valid" {
				t.Errorf("rows %s / %s: want verdicts invalid / valid, got %s / %s", b.Name, f.Name, b.Expect.Verdict, f.Expect.Verdict)
			}
			if b.Store != f.Store || b.Workload != f.Workload || b.Fault != f.Fault || b.Resource != f.Resource || b.Timing.Nodes != f.Timing.Nodes || b.Until != f.Until || b.Timing.Cycles != f.Timing.Cycles {
				t.Errorf("rows %s / %s: the buggy and the fixed build must run the same schedule (store, workload, fault, resource, nodes, cycles, until)", b.Name, f.Name)
			}
			if b.Fault == "" || b.Fault == "none" {
				t.Errorf("row %s: a published bug needs its fault schedule", b.Name)
			}
			if !strings.Contains(string(findings), "`"+name+"`") {
				t.Errorf("docs/findings.md does not list `%s`", name)
			}
		})
	}
	if entries < 8 {
		t.Errorf("examples/bugs has %d entries; issue 36 asks for at least 8", entries)
	}
	for _, r := range m.Rows {
		if strings.HasPrefix(r.Candidate, "examples/bugs/") {
			if _, err := os.Stat(filepath.Join("..", r.Candidate, "main.go")); err != nil {
				t.Errorf("row %s: candidate %s is not an entry of examples/bugs: %v", r.Name, r.Candidate, err)
			}
		}
	}
}
