package reports

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the explanation tests")

// explainCases are hand-built histories, one per reason code that makes a run invalid
// (and the unknown ones they bring along).
var explainCases = []struct {
	name    string
	fix     func() fixture
	require []string
	want    []string // invalid codes the case must explain
}{
	{"unfenced-zombie", func() fixture { f := defaultFixture(); f.unfenced = true; return f }, nil,
		[]string{"stale-write-accepted", "interleaving", "fenced-register-illegal"}},
	{"unfenced-zombie-after-poll", func() fixture {
		f := defaultFixture()
		f.unfenced, f.zombieStep = true, "poll-leader"
		return f
	}, nil, []string{"stale-write-accepted"}},
	{"split-brain-exclusive", defaultFixture, []string{checkers.RequireExclusive}, []string{"leader-overlap"}},
	{"token-duplicate", func() fixture { f := defaultFixture(); f.thirdToken = 2; return f }, nil, []string{"token-duplicate"}},
	{"token-not-monotone", func() fixture { f := defaultFixture(); f.thirdToken = 1; return f }, nil, []string{"token-not-monotone"}},
	{"no-leader-liveness", func() fixture { f := defaultFixture(); f.noThird = true; return f }, []string{checkers.RequireLiveness}, nil},
}

func checkFixture(t *testing.T, f fixture, require []string) *checkers.Results {
	t.Helper()
	p := checkers.Params{Store: f.store, Recipe: f.recipe, Nodes: f.cands[:], LeaseTTL: checkers.Duration(2 * time.Second),
		WriteInterval: checkers.Duration(50 * time.Millisecond), PorcupineTimeout: checkers.Duration(20 * time.Second),
		Require: require, OutputDir: t.TempDir()}
	if f.unfenced {
		p.ResourceMode = checkers.ModeUnfenced
	}
	res, err := checkers.Check(context.Background(), f.events(), p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// formatExplanations is the golden form: one block per explanation.
func formatExplanations(r *checkers.Results, xs []Explanation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict: %s\n", r.Verdict)
	for _, x := range xs {
		fmt.Fprintf(&b, "\n%s (%s, reason %d, fault %d)\n%s\n", x.Code, x.Severity, x.Reason+1, x.FaultID, x.Text)
		fmt.Fprintf(&b, "zoom: %s, %s → %s\n", strings.Join(x.Nodes, " "), rel(x.FromT, r.Run.StartT), rel(x.ToT, r.Run.StartT))
	}
	return b.String()
}

func TestExplainGolden(t *testing.T) {
	for _, tc := range explainCases {
		t.Run(tc.name, func(t *testing.T) {
			res := checkFixture(t, tc.fix(), tc.require)
			xs := Explain(res)
			if res.Verdict != checkers.Invalid {
				t.Fatalf("verdict %s, want invalid (reasons %+v)", res.Verdict, res.Reasons)
			}
			// Every code that makes the verdict is explained once, the first reason of it.
			codes := map[string]int{}
			for i, r := range res.Reasons {
				if _, ok := codes[r.Code]; !ok {
					codes[r.Code] = i
				}
			}
			if len(xs) != len(codes) {
				t.Fatalf("%d explanations for %d reason codes", len(xs), len(codes))
			}
			for _, x := range xs {
				if codes[x.Code] != x.Reason {
					t.Errorf("%s explains reason %d, want the first (%d)", x.Code, x.Reason, codes[x.Code])
				}
				if len(x.Steps) < 2 || x.Text == "" || x.ToT <= x.FromT || len(x.Nodes) == 0 {
					t.Errorf("%s: thin explanation %+v", x.Code, x)
				}
				r := res.Reasons[x.Reason]
				if op := firstUnplaced(res, r); op != nil {
					r.T = op.CallT // the story is about the first operation Porcupine could not place
				}
				if r.T > 0 && (r.T < x.FromT || r.T > x.ToT) {
					t.Errorf("%s: zoom window %d..%d misses the reason at %d", x.Code, x.FromT, x.ToT, r.T)
				}
			}
			for _, c := range tc.want {
				if _, ok := codes[c]; !ok {
					t.Errorf("fixture does not produce %s (codes %v)", c, codes)
				}
			}
			got := formatExplanations(res, xs)
			path := filepath.Join("testdata", "explain", tc.name+".golden")
			if *updateGolden {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Fatalf("explanations differ from %s (run with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

// A valid run has nothing to explain; findings are not explained.
func TestExplainValidRunIsEmpty(t *testing.T) {
	res := checkFixture(t, defaultFixture(), nil)
	if res.Verdict != checkers.Valid {
		t.Fatalf("fixture verdict %s: %+v", res.Verdict, res.Reasons)
	}
	if xs := Explain(res); len(xs) != 0 {
		t.Fatalf("explanations for a valid run: %+v", xs)
	}
}

// results.json with explanations still reads as checkers.Results, and carries them.
func TestWriteResultsCarriesExplanations(t *testing.T) {
	f := defaultFixture()
	f.unfenced = true
	res := checkFixture(t, f, nil)
	dir := t.TempDir()
	if _, err := WriteResults(dir, res); err != nil {
		t.Fatal(err)
	}
	back, err := checkers.ReadResults(filepath.Join(dir, checkers.ResultsFile))
	if err != nil || back.Verdict != checkers.Invalid {
		t.Fatalf("read back: %v %+v", err, back)
	}
	b, _ := os.ReadFile(filepath.Join(dir, checkers.ResultsFile))
	var doc struct {
		Explanations []Explanation `json:"explanations"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Explanations) == 0 || doc.Explanations[0].Code != "stale-write-accepted" {
		t.Fatalf("explanations in results.json: %v %+v", err, doc.Explanations)
	}
}
