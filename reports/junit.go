package reports

import (
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/checkers"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

// JUnitCheckers are the test cases of a run's junit.xml: the checkers' own list, in order.
// A reason of a checker not in it (none today) lands in "validity".
var JUnitCheckers = checkers.Names()

// JUnit XML, in the subset CI systems (Jenkins, GitLab, GitHub test reporters) read.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr,omitempty"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr,omitempty"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	XMLName    xml.Name       `xml:"testsuite"`
	Name       string         `xml:"name,attr"`
	Tests      int            `xml:"tests,attr"`
	Failures   int            `xml:"failures,attr"`
	Errors     int            `xml:"errors,attr"`
	Time       string         `xml:"time,attr,omitempty"`
	Timestamp  string         `xml:"timestamp,attr,omitempty"`
	Properties *junitProps    `xml:"properties,omitempty"`
	Cases      []junitCase    `xml:"testcase"`
	SystemOut  *junitCharData `xml:"system-out,omitempty"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string         `xml:"name,attr"`
	Classname string         `xml:"classname,attr"`
	Time      string         `xml:"time,attr,omitempty"`
	Failure   *junitProblem  `xml:"failure,omitempty"`
	Error     *junitProblem  `xml:"error,omitempty"`
	SystemOut *junitCharData `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitCharData struct {
	Text string `xml:",chardata"`
}

// junitSuiteFor turns a run's results into one test suite: a test case per checker, a
// <failure> for every invalid reason and an <error type="unknown"> for every unknown one, so
// an undecided run never shows as a pass.
func junitSuiteFor(name string, r *checkers.Results, cfg *runConfig) junitSuite {
	s := junitSuite{Name: name, Time: fmt.Sprintf("%.3f", float64(r.Run.EndT-r.Run.StartT)/1e9)}
	if !cfg.Started.IsZero() {
		s.Timestamp = cfg.Started.UTC().Format("2006-01-02T15:04:05")
	}
	props := []junitProp{{"verdict", string(r.Verdict)}, {"store", firstNonEmpty(cfg.Flags.Store, r.Params.Store)},
		{"recipe", firstNonEmpty(cfg.Flags.Recipe, r.Params.Recipe)}, {"nemesis", cfg.Flags.Nemesis}, {"seed", fmt.Sprint(cfg.Seed)}}
	if cfg.Replay != "" {
		props = append(props, junitProp{"replay", cfg.Replay})
	}
	s.Properties = &junitProps{props}
	byChecker := map[string][]checkers.Reason{}
	for _, x := range r.Reasons {
		c := x.Checker
		if !slices.Contains(JUnitCheckers, c) {
			c = "validity"
		}
		byChecker[c] = append(byChecker[c], x)
	}
	findings := map[string][]string{}
	for _, x := range r.Findings {
		findings[x.Checker] = append(findings[x.Checker], "finding: "+x.Message)
	}
	for _, c := range JUnitCheckers {
		tc := junitCase{Name: c, Classname: "splitbrain." + name}
		var inv, unk []string
		for _, x := range byChecker[c] {
			if x.Severity == checkers.SevInvalid {
				inv = append(inv, x.Message)
			} else {
				unk = append(unk, x.Message)
			}
		}
		switch {
		case len(inv) > 0:
			tc.Failure = &junitProblem{Message: firstLine(inv[0], len(inv)), Type: "invalid", Text: strings.Join(append(inv, unk...), "\n")}
			s.Failures++
		case len(unk) > 0:
			tc.Error = &junitProblem{Message: firstLine(unk[0], len(unk)), Type: "unknown", Text: strings.Join(unk, "\n")}
			s.Errors++
		}
		if f := findings[c]; len(f) > 0 {
			tc.SystemOut = &junitCharData{strings.Join(f, "\n")}
		}
		s.Cases = append(s.Cases, tc)
	}
	s.Tests = len(s.Cases)
	// A verdict that no checker reason explains (should not happen) still must not pass.
	if r.Verdict != checkers.Valid && s.Failures+s.Errors == 0 {
		s.Cases = append(s.Cases, junitCase{Name: "verdict", Classname: "splitbrain." + name,
			Error: &junitProblem{Message: "verdict " + string(r.Verdict) + " without reasons", Type: string(r.Verdict)}})
		s.Tests++
		s.Errors++
	}
	return s
}

func firstLine(msg string, n int) string {
	if n > 1 {
		return fmt.Sprintf("%s (and %d more)", msg, n-1)
	}
	return msg
}

// JUnitCase is one test case for a JUnit document written outside this package (the
// matrix's): one writer for every JUnit file the project makes.
type JUnitCase struct {
	Name      string
	Classname string
	Seconds   float64
	Failure   *JUnitProblem // the test failed (an invalid verdict, an outcome that differs)
	Error     *JUnitProblem // the test could not decide (unknown, harness error)
	SystemOut string
}

// JUnitProblem is a failure or error of a JUnitCase.
type JUnitProblem struct{ Message, Type, Text string }

// WriteJUnitCases writes cases as one test suite named suiteName to path.
func WriteJUnitCases(path, suiteName string, cases []JUnitCase) error {
	s := junitSuite{Name: suiteName}
	var total float64
	problem := func(p *JUnitProblem) *junitProblem {
		if p == nil {
			return nil
		}
		return &junitProblem{Message: p.Message, Type: p.Type, Text: p.Text}
	}
	for _, c := range cases {
		jc := junitCase{Name: c.Name, Classname: c.Classname, Time: fmt.Sprintf("%.3f", c.Seconds),
			Failure: problem(c.Failure), Error: problem(c.Error)}
		if c.SystemOut != "" {
			jc.SystemOut = &junitCharData{c.SystemOut}
		}
		if jc.Failure != nil {
			s.Failures++
		}
		if jc.Error != nil {
			s.Errors++
		}
		total += c.Seconds
		s.Cases = append(s.Cases, jc)
	}
	s.Tests, s.Time = len(s.Cases), fmt.Sprintf("%.3f", total)
	b, err := marshalJUnit(junitSuites{Name: suiteName, Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: s.Time, Suites: []junitSuite{s}})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeAtomic(path, b)
}

// WriteJUnit writes junit.xml for one run into its directory.
func WriteJUnit(runDir string, r *checkers.Results, cfg *runConfig) error {
	abs, _ := filepath.Abs(runDir)
	name := testName(abs, cfg, r) + "/" + filepath.Base(abs)
	s := junitSuiteFor(name, r, cfg)
	doc := junitSuites{Name: "splitbrain", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: s.Time, Suites: []junitSuite{s}}
	b, err := marshalJUnit(doc)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(runDir, JUnitFile), b)
}

func marshalJUnit(doc junitSuites) ([]byte, error) {
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode junit: %w", err)
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// CombineJUnit merges the junit.xml files at paths (each a <testsuites> or a bare
// <testsuite>) into one <testsuites> document at out, for a matrix of runs.
func CombineJUnit(paths []string, out string) error {
	if len(paths) == 0 {
		return errors.New("combine junit: no input files given")
	}
	doc := junitSuites{Name: "splitbrain matrix"}
	var total float64
	for _, p := range paths {
		b, err := runfile.ReadFile(p, runfile.MaxJSON)
		if err != nil {
			return fmt.Errorf("combine junit: %w", err)
		}
		var many junitSuites
		if err := xml.Unmarshal(b, &many); err == nil && many.XMLName.Local == "testsuites" {
			doc.Suites = append(doc.Suites, many.Suites...)
			continue
		}
		var one junitSuite
		if err := xml.Unmarshal(b, &one); err != nil || one.XMLName.Local != "testsuite" {
			return fmt.Errorf("combine junit: %s is not a JUnit XML file (want <testsuites> or <testsuite> at the top)", p)
		}
		doc.Suites = append(doc.Suites, one)
	}
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		var t float64
		fmt.Sscanf(s.Time, "%g", &t)
		total += t
	}
	doc.Time = fmt.Sprintf("%.3f", total)
	b, err := marshalJUnit(doc)
	if err != nil {
		return err
	}
	return writeAtomic(out, b)
}
