package reports

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/checkers"
)

func renderFixture(t *testing.T, f fixture) (string, *checkers.Results, string) {
	t.Helper()
	root := t.TempDir()
	if keep := os.Getenv("SPLITBRAIN_KEEP_FIXTURE"); keep != "" { // to look at a fixture report by hand
		root = filepath.Join(keep, t.Name())
	}
	dir := filepath.Join(root, "store", "etcd-etcd-election-pause-leader", "20250102T030405.000Z")
	res := writeRun(t, dir, f)
	if err := RenderRun(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b), res, dir
}

func mustContain(t *testing.T, page string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(page, p) {
			t.Errorf("report lacks %q", p)
		}
	}
}

func TestReportStructure(t *testing.T) {
	page, res, _ := renderFixture(t, defaultFixture())
	if res.Verdict != checkers.Valid {
		t.Fatalf("fixture verdict %s, want valid (reasons %+v)", res.Verdict, res.Reasons)
	}
	if res.Tenures.OverlapCount == 0 || res.Resource.StaleRejectedN == 0 {
		t.Fatalf("fixture should have an overlap and a rejected stale write: %+v %+v", res.Tenures.OverlapCount, res.Resource.StaleRejectedN)
	}
	for _, name := range checkers.Names() { // the checker table follows the checkers' list
		mustContain(t, page, `data-checker="`+name+`"`)
	}
	mustContain(t, page,
		`id="verdict" class="banner valid"`, `data-verdict="valid"`,
		`id="timeline"`, `id="lane-c1"`, `id="lane-c2"`, `id="lane-c3"`,
		`id="lane-store-etcd-1"`, `id="lane-store-etcd-2"`, `id="lane-store-etcd-3"`, `id="lane-availability"`,
		`id="fault-1"`, `id="fault-2"`, `id="fault-3"`, `id="overlap-1"`, `id="tenure-0"`,
		`class="tick t-rej"`, `class="tick t-acc"`, `id="latency-table"`, `id="latency-chart"`, `class="bound"`,
		`id="overlaps-table"`, `id="stale-rejected-table"`, `id="porcupine-table"`, `href="logs/c1.log"`,
		"splitbrain run --store etcd --recipe etcd-election --nemesis pause-leader --seed 42", "3.6.5",
		"reused from run sb-earlier, 2nd use",
		"triggered by write:100 of c2 at &#43;11.970s, in effect 30ms later",
	)
	for _, k := range []string{"pause", "kill"} {
		if !strings.Contains(page, `class="latency-row" data-kind="`+k+`"`) && !strings.Contains(page, `class="latency-row over" data-kind="`+k+`"`) {
			t.Errorf("no latency row for %s", k)
		}
	}
	// The store-node partition band sits on etcd-2's lane, not on a candidate's.
	if !regexp.MustCompile(`class="band f-partition"[^>]*><title>fault #2 partition on etcd-2`).MatchString(page) {
		t.Error("no partition band for etcd-2")
	}
	// Findings (belief overlap without --require exclusive) link into the timeline.
	if len(res.Findings) > 0 && res.Findings[0].T > 0 && !strings.Contains(page, `href="#mark-f1"`) {
		t.Error("finding does not link to its timeline mark")
	}
	if !strings.Contains(page, `id="mark-f1"`) && len(res.Findings) > 0 && res.Findings[0].T > 0 {
		t.Error("timeline has no mark for the first finding")
	}
	// Self-contained: nothing is loaded from anywhere.
	for _, bad := range []string{"http://", "https://", "src=", "@import", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("report references %q: it must open offline", bad)
		}
	}
}

func TestReportInvalidLinksReasons(t *testing.T) {
	f := defaultFixture()
	f.unfenced = true
	page, res, dir := renderFixture(t, f)
	if res.Verdict != checkers.Invalid {
		t.Fatalf("unfenced fixture verdict %s, want invalid", res.Verdict)
	}
	mustContain(t, page, `class="banner invalid"`, `href="#mark-r1"`, `id="mark-r1"`, `class="tick t-stale"`, `id="stale-accepted-table"`)
	// junit.xml: the resource case fails, nothing passes silently.
	b, err := os.ReadFile(filepath.Join(dir, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Tests != len(JUnitCheckers) || doc.Failures == 0 {
		t.Fatalf("junit: %+v", doc)
	}
	for _, c := range doc.Suites[0].Cases {
		if c.Name == "resource" && (c.Failure == nil || !strings.Contains(c.Failure.Text, "stale")) {
			t.Errorf("resource case: %+v", c)
		}
		if c.Name == "tokens" && c.Failure != nil {
			t.Errorf("tokens case should pass: %+v", c.Failure)
		}
	}
}

// TestReportEscapesEverything: hostile candidate names, step-down reasons, config strings and
// candidate output must appear only as text.
func TestReportEscapesEverything(t *testing.T) {
	const script = `<script>alert(1)</script>`
	const img = `"><img src=x onerror=alert(2)>`
	f := defaultFixture()
	f.cands[1] = "c2" + script
	f.stepReason = img
	f.schedule = "pause:target=leader" + script + img
	f.recipe = "etcd" + img
	f.extraLine = "garbage " + script + img
	page, res, dir := renderFixture(t, f)
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("%d <script elements, want only the report's own", n)
	}
	for _, bad := range []string{script, "<img", "onerror=alert(2)>"} {
		if strings.Contains(page, bad) {
			t.Errorf("unescaped %q in the report", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the hostile candidate name is not shown escaped")
	}
	_ = res
	// junit.xml is XML-escaped too and still parses.
	b, _ := os.ReadFile(filepath.Join(dir, JUnitFile))
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("junit with hostile strings does not parse: %v", err)
	}
	if strings.Contains(string(b), "<script>") {
		t.Error("junit.xml carries a raw <script>")
	}
}

func TestRenderRunNeedsResults(t *testing.T) {
	dir := t.TempDir()
	err := RenderRun(dir)
	if err == nil || !strings.Contains(err.Error(), "splitbrain check") {
		t.Fatalf("want an error that says to run splitbrain check, got %v", err)
	}
}

// fastDecode must agree with encoding/json, or decline.
func TestFastDecodeAgreesWithJSON(t *testing.T) {
	f := defaultFixture()
	f.cands[0] = `c"1\x`
	for _, e := range f.events() {
		b, _ := json.Marshal(&e)
		var slow, fast histLine
		if err := json.Unmarshal(b, &slow); err != nil {
			t.Fatal(err)
		}
		if fastDecode(b, &fast) && fast != slow {
			t.Fatalf("fast %+v\nslow %+v\nline %s", fast, slow, b)
		}
	}
}
