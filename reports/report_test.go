package reports

import (
	"encoding/json"
	"encoding/xml"
	"html"
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

// TestReportNamesTheLibrary: a library recipe's run says which build of the library was judged.
func TestReportNamesTheLibrary(t *testing.T) {
	f := defaultFixture()
	f.recipe, f.store = "kazoo-election", "zookeeper"
	f.library = []string{"python3-kazoo 2.8.0-2 (Debian)", "python3 3.11.2-1+b1 (Debian)"}
	page, _, _ := renderFixture(t, f)
	if !regexp.MustCompile(`<dt>library</dt><dd>python3-kazoo 2\.8\.0-2 \(Debian\), python3 3\.11\.2-1\&#43;b1 \(Debian\)`).MatchString(page) {
		t.Error("the report does not name the library's pinned versions")
	}
	page, _, _ = renderFixture(t, defaultFixture())
	if strings.Contains(page, "<dt>library</dt>") {
		t.Error("a Go recipe's report shows a library line")
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
	// The banner places the late writes against the next election, as results.json does.
	if res.LateWrites == nil {
		t.Fatal("an invalid run's results carry no late-writes attribution")
	}
	mustContain(t, page, `id="late-writes"`, "Late writes, "+html.EscapeString(res.LateWrites.String()))
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

// TestReportGroupsReasons: a zombie leader's 22 stale writes are one group per code (count,
// span, first and last write) after the explanation, and every listed reason stays on the
// page under all-reasons.
func TestReportGroupsReasons(t *testing.T) {
	f := defaultFixture()
	f.unfenced, f.zombieWrites = true, 22
	page, res, _ := renderFixture(t, f)
	if res.Verdict != checkers.Invalid {
		t.Fatalf("verdict %s, want invalid", res.Verdict)
	}
	why, groups, all := strings.Index(page, `id="explanations"`), strings.Index(page, `id="reason-groups"`), strings.Index(page, `id="all-reasons"`)
	if why < 0 || groups < 0 || all < 0 || !(why < groups && groups < all) {
		t.Fatalf("want explanations, then grouped reasons, then all reasons; at %d, %d, %d", why, groups, all)
	}
	rows := regexp.MustCompile(`<tr class="group sev-(\w+)" id="group-\d+" data-code="([^"]+)" data-count="(\d+)">`).FindAllStringSubmatch(page, -1)
	got := map[string]string{}
	for _, r := range rows {
		got[r[2]] = r[3]
	}
	if len(rows) != 3 || got["stale-write-accepted"] != "20" || got["interleaving"] != "20" {
		t.Fatalf("groups %v, want stale-write-accepted and interleaving of 20 each plus porcupine's", got)
	}
	stale := page[strings.Index(page, `data-code="stale-write-accepted" data-count="20"`):]
	stale = html.UnescapeString(stale[:strings.Index(stale, "</tr>")])
	for _, want := range []string{"c1, token 1", "+2 not listed", "+7.010s", "+7.960s", "950ms", `href="#why-stale-write-accepted"`} {
		if !strings.Contains(stale, want) {
			t.Errorf("stale-write group lacks %q:\n%s", want, stale)
		}
	}
	// First and last write ids of the tenure's stale writes.
	if ids := regexp.MustCompile(`<div class="mono wid">(w\d+)</div>`).FindAllStringSubmatch(stale, -1); len(ids) != 2 || ids[0][1] == ids[1][1] {
		t.Errorf("want the first and the last write id in the group, got %v", ids)
	}
	if n := strings.Count(page[all:], `<li class="reason"`); n != len(res.Reasons) {
		t.Errorf("all-reasons lists %d of %d reasons", n, len(res.Reasons))
	}
}
