//go:build chaos

package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The window the pages must fit: no horizontal scroll at 1400 px, and what a reader needs
// on the first 900 px.
const (
	windowW = 1400
	windowH = 900
)

// probePage loads each page of the list into a 1400×900 iframe of the same origin, one
// after another, and writes what it measured into <pre id="probe"> for --dump-dom: the
// document's scroll and client width, and the top and bottom of a few elements.
const probePage = `<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}iframe{border:0;width:%dpx;height:%dpx;display:block}</style></head>
<body><iframe id="f"></iframe><pre id="probe">pending</pre><script>
var pages=%s, out=[], i=0, f=document.getElementById('f');
var ids=['verdict','explanations','reasons-section','reason-groups','all-reasons','zooms','timeline-section','leaderboard-table','runs'];
function next(){ if(i>=pages.length){document.getElementById('probe').textContent=JSON.stringify(out);return;} f.src=pages[i]; }
f.onload=function(){
  var d=f.contentDocument, r={page:pages[i], scrollWidth:d.documentElement.scrollWidth, clientWidth:d.documentElement.clientWidth, at:{}};
  ids.forEach(function(id){var e=d.getElementById(id); if(e){var b=e.getBoundingClientRect(); r.at[id]=[Math.round(b.top),Math.round(b.bottom)];}});
  var wide=[]; d.querySelectorAll('body *').forEach(function(e){var b=e.getBoundingClientRect(); if(b.right>d.documentElement.clientWidth+1&&!e.closest('.tl-scroll')) wide.push(e.tagName+(e.id?'#'+e.id:'')+'.'+e.className);});
  r.wide=wide.slice(0,5); out.push(r); i++; next();
};
next();
</script></body></html>`

type pageLayout struct {
	Page        string            `json:"page"`
	ScrollWidth int               `json:"scrollWidth"`
	ClientWidth int               `json:"clientWidth"`
	At          map[string][2]int `json:"at"`
	Wide        []string          `json:"wide"`
}

// headless runs Chromium with the brief's flags on url and returns stdout (the DOM with
// --dump-dom).
func headless(t *testing.T, bin, url string, extra ...string) string {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), fmt.Sprintf("--window-size=%d,%d", windowW, windowH)}
	args = append(append(args, extra...), url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr strings.Builder
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, tail(stderr.String(), 3000))
	}
	return stdout.String()
}

// TestBrowserPagesFitTheWindow renders the default tier (49 fixture runs) and opens the
// index and every report in headless Chromium at 1400×900: nothing scrolls sideways, the
// index's leaderboard fits the first screen, and an invalid or unknown report shows its
// explanation and then its grouped reasons on the first screen. Screenshots of the index and
// of an unfenced zombie-leader report land in the artifacts, and in docs/img when
// SPLITBRAIN_DOCS_IMG names that directory.
func TestBrowserPagesFitTheWindow(t *testing.T) {
	bin := chromium(t)
	art := artifactDir(t)
	store := filepath.Join(art, "default-tier")
	makeDefaultTierStore(t, store)
	// Beside the tier: an unknown run (a contract violation) with a 400-character schedule
	// of no spaces, which must wrap, not widen the page.
	odd := defaultFixture()
	odd.extraLine = "not json " + strings.Repeat("x", 300)
	odd.nemesis = "pause:target=leader,for=1xTTL" + strings.Repeat(",at=1s", 60)
	odd.schedule, odd.started = odd.nemesis, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	oddDir := filepath.Join(store, "etcd-etcd-election-custom-long", "20261125T120000.000Z")
	if res := writeRun(t, oddDir, odd); res.Verdict != "unknown" {
		t.Fatalf("the contract-violation fixture is %s, want unknown", res.Verdict)
	}
	if err := RenderRun(oddDir); err != nil {
		t.Fatal(err)
	}
	if err := RenderIndex(store); err != nil {
		t.Fatal(err)
	}
	t.Logf("artifacts: %s", art)

	var pages []string
	reportOf := map[string]string{} // page -> verdict
	runs, problems := ScanStore(store)
	if len(problems) > 0 {
		t.Fatalf("store problems: %v", problems)
	}
	for _, r := range runs {
		pages = append(pages, "/"+r.Link)
		reportOf["/"+r.Link] = r.Verdict
	}
	pages = append([]string{"/" + IndexFile}, pages...)

	h, closeRoot, err := StoreHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRoot()
	list, _ := json.Marshal(pages)
	// A generous virtual-time budget: pages load one after another in the iframe. Scrollbars
	// stay, as in a real window: the vertical one takes its width from the page.
	out, base := probeInBrowser(t, bin, fmt.Sprintf(probePage, windowW, windowH, list), h, 120000)
	var layouts []pageLayout
	if err := json.Unmarshal([]byte(out), &layouts); err != nil {
		t.Fatalf("probe output %q: %v", tail(out, 500), err)
	}
	if len(layouts) != len(pages) {
		t.Fatalf("the probe measured %d of %d pages", len(layouts), len(pages))
	}
	os.WriteFile(filepath.Join(art, "layout.json"), []byte(out), 0o644)
	shotReport := ""
	for _, l := range layouts {
		if l.ClientWidth < windowW-20 || l.ScrollWidth > l.ClientWidth {
			t.Errorf("%s scrolls sideways: scrollWidth %d > clientWidth %d (wide elements: %v)", l.Page, l.ScrollWidth, l.ClientWidth, l.Wide)
		}
		if l.Page == "/"+IndexFile {
			lb, ok := l.At["leaderboard-table"]
			if !ok || lb[1] > windowH {
				t.Errorf("index: the leaderboard ends at %v px, below the first %d px", lb, windowH)
			}
			continue
		}
		v := reportOf[l.Page]
		if v != "invalid" && v != "unknown" {
			if _, has := l.At["reason-groups"]; has {
				t.Errorf("%s (%s) lists reasons", l.Page, v)
			}
			continue
		}
		why, okWhy := l.At["explanations"]
		groups, okGroups := l.At["reason-groups"]
		all, okAll := l.At["all-reasons"]
		switch {
		case !okWhy || !okGroups || !okAll:
			t.Errorf("%s (%s): want explanations, grouped reasons and all reasons; found %v", l.Page, v, l.At)
		case !(why[0] < groups[0] && groups[0] < all[0]):
			t.Errorf("%s: explanation at %d, grouped reasons at %d, all reasons at %d: want them in this order", l.Page, why[0], groups[0], all[0])
		case groups[0] > windowH-80:
			t.Errorf("%s: the grouped reasons start at %d px, not on the first %d px screen", l.Page, groups[0], windowH)
		}
		if strings.Contains(l.Page, "k8s-lease-pause-leader-unfenced") {
			shotReport = l.Page
		}
	}

	// Screenshots of the first screen, to look at and for docs/reports.md.
	shots := map[string]string{"index-default-tier.png": "/" + IndexFile, "report-zombie-fixture.png": shotReport}
	for name, page := range shots {
		if page == "" {
			t.Errorf("no page for %s", name)
			continue
		}
		shot := filepath.Join(art, name)
		headless(t, bin, base+page, "--hide-scrollbars", "--screenshot="+shot)
		if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
			t.Errorf("screenshot %s missing or blank: %v", shot, err)
			continue
		}
		if dir := os.Getenv("SPLITBRAIN_DOCS_IMG"); dir != "" {
			if err := copyFile(shot, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// probeInBrowser serves probe (a page that writes its findings as JSON into <pre id="probe">)
// at /__probe.html beside site until the test ends, loads it in headless Chromium with the
// given virtual-time budget (ms) and returns what the probe wrote and the server's base URL.
func probeInBrowser(t *testing.T, bin, probe string, site http.Handler, budgetMS int) (out, base string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/__probe.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, probe)
	})
	mux.Handle("/", site)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base = "http://" + ln.Addr().String()
	// Chromium dumps the DOM when the virtual-time budget is spent; on a loaded machine the
	// pages the probe loads may not have finished by then (the probe still says "pending").
	// Chromium offers no "dump when this element changes" switch, so the probe is loaded
	// again with twice the budget, up to three times, and each retry is logged.
	for attempt := 1; ; attempt++ {
		dom := headless(t, bin, base+"/__probe.html", fmt.Sprintf("--virtual-time-budget=%d", budgetMS), "--dump-dom")
		m := regexp.MustCompile(`(?s)<pre id="probe">(.*?)</pre>`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("the probe page wrote nothing:\n%s", tail(dom, 2000))
		}
		if out = html.UnescapeString(m[1]); out != "pending" || attempt == 3 {
			return out, base
		}
		budgetMS *= 2
		t.Logf("the probe had not finished within its virtual-time budget (attempt %d); again with %d ms", attempt, budgetMS)
	}
}
