// Command splitbrain-testtimes reads `go test -json` on stdin and prints what `go test` would
// without -v (each package's result line, the whole output of a test that failed, build
// errors), then the slowest tests, and writes every test's time to -out. make test pipes
// through it so each run says where its minutes went, test by test, not only per package
// (docs/performance.md), while its log stays as short as a plain go test's.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string    // build-output and build-fail lines
	Time       time.Time // when test2json saw the event
}

type testKey struct{ pkg, test string }

// span is when one package's test binary ran, as its first and last events were stamped: with
// go test -p, the order packages start in decides how long the last one keeps the run going.
type span struct {
	pkg        string
	start, end time.Time
}

// timing is one finished test (or subtest) and how long it took.
type timing struct {
	testKey
	elapsed time.Duration
	result  string
}

func main() {
	out := flag.String("out", "", "write every test's time here, slowest first")
	top := flag.Int("top", 15, "print the `N` slowest top-level tests")
	flag.Parse()
	times, spans, failed, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "splitbrain-testtimes: %v\n", err)
		os.Exit(2)
	}
	writeSlowest(os.Stdout, times, *top)
	writeSpans(os.Stdout, spans)
	if *out != "" {
		if err := writeTimes(*out, times); err != nil {
			fmt.Fprintf(os.Stderr, "splitbrain-testtimes: %v\n", err)
			os.Exit(2)
		}
	}
	if failed {
		os.Exit(1)
	}
}

// summarize copies the plain go test output of the stream in to w and returns each finished
// test's time, when each package ran, and whether anything failed. Output of a test is held until it ends and shown
// only when it failed; a package that fails with tests still running (a panic, a timeout)
// shows theirs too, since that is where the stack is.
func summarize(in io.Reader, w io.Writer) ([]timing, []span, bool, error) {
	held := map[testKey]*strings.Builder{}
	var times []timing
	var spans []span
	started := map[string]time.Time{}
	failed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event (go vet's or the linker's own words): pass it on as it came.
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		k := testKey{e.Package, e.Test}
		if _, ok := started[e.Package]; !ok && e.Package != "" && !e.Time.IsZero() && e.Action != "build-output" {
			started[e.Package] = e.Time
		}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "build-fail":
			failed = true
		case "output":
			if e.Test == "" {
				// The package's own lines (ok, FAIL, a panic outside any test), but not -v's
				// bare PASS, which plain go test does not print.
				if e.Output != "PASS\n" {
					fmt.Fprint(w, e.Output)
				}
				continue
			}
			if strings.HasPrefix(e.Output, "=== ") {
				continue // -v's RUN, PAUSE, CONT, NAME markers
			}
			b := held[k]
			if b == nil {
				b = &strings.Builder{}
				held[k] = b
			}
			b.WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				if t0, ok := started[e.Package]; ok && !e.Time.IsZero() {
					spans = append(spans, span{e.Package, t0, e.Time})
				}
				if e.Action == "fail" {
					failed = true
					// Tests never ended: the package died under them; show where.
					for hk, b := range held {
						if hk.pkg == e.Package {
							fmt.Fprint(w, b.String())
							delete(held, hk)
						}
					}
				}
				continue
			}
			times = append(times, timing{k, time.Duration(e.Elapsed * float64(time.Second)), e.Action})
			if b := held[k]; b != nil {
				if e.Action == "fail" {
					failed = true
					// A parent test's output (its --- FAIL line) comes after its subtests':
					// each is shown when it ends, so the order stays go test's.
					fmt.Fprint(w, b.String())
				}
				delete(held, k)
			}
		}
	}
	return times, spans, failed, sc.Err()
}

func slowestFirst(times []timing) []timing {
	s := slices.Clone(times)
	slices.SortStableFunc(s, func(a, b timing) int {
		if a.elapsed != b.elapsed {
			return int(b.elapsed - a.elapsed)
		}
		return strings.Compare(a.pkg+a.test, b.pkg+b.test)
	})
	return s
}

func writeSlowest(w io.Writer, times []timing, n int) {
	var tops []timing
	for _, t := range slowestFirst(times) {
		if !strings.Contains(t.test, "/") {
			tops = append(tops, t)
		}
	}
	if n <= 0 || len(tops) == 0 {
		return
	}
	fmt.Fprintf(w, "slowest tests (%d of %d):\n", min(n, len(tops)), len(tops))
	for _, t := range tops[:min(n, len(tops))] {
		fmt.Fprintf(w, "  %7.1fs  %s  %s\n", t.elapsed.Seconds(), shortPkg(t.pkg), t.test)
	}
}

// writeSpans prints when each package that ran at least a second started and ended (seconds
// after the first package started), in the order they started: the packing of go test -p.
func writeSpans(w io.Writer, spans []span) {
	if len(spans) == 0 {
		return
	}
	s := slices.Clone(spans)
	slices.SortStableFunc(s, func(a, b span) int { return a.start.Compare(b.start) })
	first := s[0].start
	s = slices.DeleteFunc(s, func(p span) bool { return p.end.Sub(p.start) < time.Second })
	fmt.Fprintf(w, "packages, in the order they started (%d of %d that ran a second or more; seconds after the first started):\n", len(s), len(spans))
	for _, p := range s {
		fmt.Fprintf(w, "  %6.0f -> %6.0f  (%5.0fs)  %s\n", p.start.Sub(first).Seconds(), p.end.Sub(first).Seconds(),
			p.end.Sub(p.start).Seconds(), shortPkg(p.pkg))
	}
}

func writeTimes(path string, times []timing) error {
	var b strings.Builder
	b.WriteString("# seconds\tresult\tpackage\ttest (slowest first; subtests included)\n")
	for _, t := range slowestFirst(times) {
		fmt.Fprintf(&b, "%.2f\t%s\t%s\t%s\n", t.elapsed.Seconds(), t.result, t.pkg, t.test)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// shortPkg drops the module path, which every package here shares.
func shortPkg(p string) string {
	if i := strings.Index(p, "/splitbrain/"); i >= 0 {
		return p[i+len("/splitbrain/"):]
	}
	return p
}
