package reports

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The report of an invalid run opens with the explanations, each with a zoomed timeline of
// the involved nodes only, and the reasons link to them.
func TestReportShowsExplanations(t *testing.T) {
	dir := t.TempDir()
	f := defaultFixture()
	f.unfenced = true
	writeRun(t, dir, f)
	if err := RenderRun(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if os.Getenv("KEEP_REPORT") != "" {
		os.WriteFile(os.Getenv("KEEP_REPORT"), b, 0o644)
	}
	why := strings.Index(page, `id="explanations"`)
	tl := strings.Index(page, `id="timeline-section"`)
	if why < 0 || tl < 0 || why > tl {
		t.Fatalf("explanations section missing or below the timeline (%d, %d)", why, tl)
	}
	block := html.UnescapeString(page[why:tl])
	for _, want := range []string{`id="why-stale-write-accepted"`, "c1 paused at +3.000s of the run", "c1 wrote with its old token 1 at +4.010s",
		"the unfenced resource accepted it although token 2 had already been accepted", `class="tl-zoomed"`} {
		if !strings.Contains(block, want) {
			t.Errorf("explanation block lacks %q", want)
		}
	}
	if !strings.Contains(page, `<a class="why-link" href="#why-stale-write-accepted">`) {
		t.Error("the stale-write reason does not link to its explanation")
	}
	// The zoomed timeline of the stale write has c1, c2 and availability lanes only, and
	// its element ids do not collide with the main timeline's.
	zoom := block[strings.Index(block, `id="why-stale-write-accepted"`):]
	zoom = zoom[:strings.Index(zoom, `</svg></div></div>`)]
	lanes := regexp.MustCompile(`data-lane="([^"]+)"`).FindAllStringSubmatch(zoom, -1)
	var got []string
	for _, l := range lanes {
		got = append(got, l[1])
	}
	if strings.Join(got, " ") != "why1-lane-c1 why1-lane-c2 why1-lane-availability" {
		t.Errorf("zoomed lanes %v, want c1, c2, availability", got)
	}
	if !strings.Contains(zoom, "tick t-stale") {
		t.Error("zoomed timeline does not draw the stale write")
	}
	ids := regexp.MustCompile(`\sid="([^"]+)"`).FindAllStringSubmatch(page, -1)
	seen := map[string]bool{}
	for _, m := range ids {
		if seen[m[1]] {
			t.Errorf("duplicate element id %q", m[1])
		}
		seen[m[1]] = true
	}
}
