//go:build chaos

package reports

import (
	"context"
	"html"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// artifactDir keeps the browser test's store and screenshots where CI uploads the store:
// $SPLITBRAIN_STORE_DIR or <repo>/store, under _artifacts/reports-browser/<timestamp>.
func artifactDir(t *testing.T) string {
	root := os.Getenv("SPLITBRAIN_STORE_DIR")
	if root == "" {
		root = filepath.Join("..", "store")
	}
	dir := filepath.Join(root, "_artifacts", "reports-browser", time.Now().UTC().Format("20060102T150405.000Z"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// chromium is the headless browser the page tests use: $SPLITBRAIN_CHROMIUM, else chromium
// (Debian's package), chromium-browser or google-chrome on PATH. The test installs nothing:
// `make test` runs scripts/ensure-chromium.sh first, and a missing browser fails the test,
// since a page nobody opened is not checked.
func chromium(t *testing.T) string {
	if p := os.Getenv("SPLITBRAIN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: run scripts/ensure-chromium.sh (make test does) or set SPLITBRAIN_CHROMIUM")
	return ""
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// browse runs headless chromium on url once for the DOM after scripts ran and once for a
// screenshot; it fails the test on any uncaught script error or console error.
func browse(t *testing.T, bin, url, shot string) string {
	t.Helper()
	target := url
	run := func(extra ...string) (string, string) {
		args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--window-size=1400,2200",
			"--virtual-time-budget=3000"}
		args = append(args, extra...)
		args = append(args, target)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", extra, err, tail(stderr.String(), 3000))
		}
		return stdout.String(), stderr.String()
	}
	dom, log1 := run("--dump-dom")
	// The screenshot shows the page from its top: without the fragment, which scrolls.
	if i := strings.IndexByte(url, '#'); i >= 0 {
		target = url[:i]
	}
	_, log2 := run("--screenshot=" + shot)
	for _, line := range strings.Split(log1+log2, "\n") {
		if strings.Contains(line, "Uncaught") || (strings.Contains(line, "CONSOLE") && strings.Contains(strings.ToLower(line), "error")) {
			t.Errorf("console error on %s: %s", url, line)
		}
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Errorf("screenshot %s missing or blank: %v", shot, err)
	}
	return dom
}

func TestBrowserRendersReportAndIndex(t *testing.T) {
	bin := chromium(t)
	art := artifactDir(t)
	store := makeStoreIn(t, filepath.Join(art, "store"))
	if err := RenderIndex(store); err != nil {
		t.Fatal(err)
	}
	t.Logf("artifacts: %s", art)

	// 1. The invalid run's report from the file system, opened at a reason's anchor so the
	// zoom-and-scroll script runs.
	report := filepath.Join(store, "etcd-etcd-election-pause-leader", "20250103T000000.000Z", ReportFile)
	dom := browse(t, bin, "file://"+report+"#mark-r1", filepath.Join(art, "report.png"))
	for _, want := range []string{`id="timeline"`, `id="lane-c1"`, `id="lane-c2"`, `id="lane-c3"`, `id="lane-store-etcd-2"`,
		`id="overlap-1"`, `id="mark-r1"`, `class="banner invalid"`, `id="latency-chart"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("report DOM lacks %s", want)
		}
	}
	// The explanation block sits above the timeline, tells the stale write's story and
	// carries a zoomed timeline of the two involved candidates with the stale write on it.
	why, tl := strings.Index(dom, `id="explanations"`), strings.Index(dom, `id="timeline-section"`)
	if why < 0 || why > tl {
		t.Errorf("explanations missing or below the timeline")
	} else {
		block := html.UnescapeString(dom[why:tl])
		for _, want := range []string{`id="why-stale-write-accepted"`, "c1 wrote with its old token 1 at +4.010s",
			`class="tl-zoomed"`, `id="why1-lane-c1"`, `id="why1-lane-c2"`, "tick t-stale"} {
			if !strings.Contains(block, want) {
				t.Errorf("explanation block lacks %s", want)
			}
		}
		if strings.Contains(block, `id="why1-lane-c3"`) {
			t.Errorf("zoomed timeline shows c3, which the stale write does not involve")
		}
	}
	if !strings.Contains(dom, `href="#why-stale-write-accepted"`) {
		t.Errorf("the reason does not link to its explanation")
	}
	// The script ran: the anchor zoomed the timeline in (width grew beyond the base width).
	if !strings.Contains(dom, `id="tl-zoom" transform="scale(4,1)"`) {
		t.Errorf("the timeline did not zoom to the reason's anchor: the report's script did not run")
	}
	os.WriteFile(filepath.Join(art, "report.dom.html"), []byte(dom), 0o644)

	// 2. The index and a report through the read-only server on loopback.
	h, closeRoot, err := StoreHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRoot()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String() + "/"
	idx := browse(t, bin, base, filepath.Join(art, "index.png"))
	for _, want := range []string{`id="leaderboard-table"`, `data-row="etcd-election (etcd)"`, `data-verdict="invalid"`, `id="runs-table"`} {
		if !strings.Contains(idx, want) {
			t.Errorf("served index DOM lacks %s", want)
		}
	}
	served := browse(t, bin, base+"redis-redis-setnx-none/20250102T000000.000Z/report.html", filepath.Join(art, "report-served.png"))
	if !strings.Contains(served, `class="banner valid"`) || !strings.Contains(served, `id="lane-c1"`) {
		t.Error("served report did not render")
	}
}
