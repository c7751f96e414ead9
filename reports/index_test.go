package reports

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// makeStore writes three runs: two of etcd-election under pause-leader (older valid, newer
// invalid) and one of redis-setnx with no faults; plus a latest link and a run in progress.
func makeStore(t *testing.T) string {
	t.Helper()
	return makeStoreIn(t, filepath.Join(t.TempDir(), "store"))
}

func makeStoreIn(t *testing.T, store string) string {
	t.Helper()
	mk := func(test, name string, f fixture) string {
		dir := filepath.Join(store, test, name)
		writeRun(t, dir, f)
		if err := RenderRun(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	old := defaultFixture()
	old.started = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	mk("etcd-etcd-election-pause-leader", "20250101T000000.000Z", old)
	bad := defaultFixture()
	bad.unfenced = true
	bad.started = time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC)
	mk("etcd-etcd-election-pause-leader", "20250103T000000.000Z", bad)
	rs := defaultFixture()
	rs.recipe, rs.store, rs.nemesis, rs.schedule = "redis-setnx", "redis", "none", "none"
	rs.started = time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)
	mk("redis-redis-setnx-none", "20250102T000000.000Z", rs)
	if err := os.Symlink("20250103T000000.000Z", filepath.Join(store, "etcd-etcd-election-pause-leader", "latest")); err != nil {
		t.Fatal(err)
	}
	running := filepath.Join(store, "zookeeper-zookeeper-seq-none", "20250104T000000.000Z")
	if err := os.MkdirAll(running, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(running, HistoryFile), nil, 0o644)
	return store
}

// TestIndexMarksNegativeControls: a negative control's row says so, so its invalid cells
// read as the checker catching it.
func TestIndexMarksNegativeControls(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	f := defaultFixture()
	f.recipe, f.store, f.negative = "bully", "none", true
	writeRun(t, filepath.Join(store, "none-bully-none", "20250101T000000.000Z"), f)
	if err := RenderIndex(store); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(store, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `data-row="bully [negative control] (none)"`) {
		t.Error("the leaderboard does not mark bully as a negative control")
	}
}

func TestIndexAndLeaderboard(t *testing.T) {
	store := makeStore(t)
	if err := RenderIndex(store); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(store, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	// Newest first; the symlink is not a second copy of a run.
	rows := regexp.MustCompile(`<tr class="run ([a-z-]+)"`).FindAllStringSubmatch(page, -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1])
	}
	if strings.Join(got, ",") != "no-results,invalid,valid,valid" {
		t.Fatalf("runs in order %v, want the in-progress run, then invalid (newest), valid, valid", got)
	}
	// Leaderboard: one row per recipe and store. The unfenced run (invalid) is a chip in the
	// unfenced column; the fenced pause chip keeps its valid run instead of the newer
	// unfenced one. Chips are named by fault kind, read from the schedule.
	mustContain(t, page, `id="leaderboard-table"`, `data-row="etcd-election (etcd)"`, `data-row="redis-setnx (redis)"`)
	if strings.Contains(page, `data-row="etcd-election (etcd) · unfenced"`) {
		t.Error("the unfenced run got a row of its own instead of a chip in the unfenced column")
	}
	etcd := page[strings.Index(page, `data-row="etcd-election (etcd)"`):]
	etcd = etcd[:strings.Index(etcd, "</tr>")]
	cells := strings.Split(etcd, "<td")
	if len(cells) != 8 {
		t.Fatalf("etcd row has %d cells, want 7:\n%s", len(cells)-1, etcd)
	}
	fenced, median, unfenced := cells[3], cells[4], cells[7]
	if !strings.Contains(fenced, `href="etcd-etcd-election-pause-leader/20250101T000000.000Z/report.html" data-verdict="valid" data-kind="pause"`) ||
		strings.Contains(fenced, "invalid") {
		t.Errorf("fenced cell should hold the valid pause run only:\n%s", fenced)
	}
	if !strings.Contains(unfenced, `href="etcd-etcd-election-pause-leader/20250103T000000.000Z/report.html" data-verdict="invalid" data-kind="pause"`) {
		t.Errorf("unfenced cell should hold the invalid pause run:\n%s", unfenced)
	}
	if !regexp.MustCompile(`>\d(\.\d+)?s<`).MatchString(median) {
		t.Errorf("no failover median in %s", median)
	}
	redis := page[strings.Index(page, `data-row="redis-setnx (redis)"`):]
	redis = redis[:strings.Index(redis, "</tr>")]
	if !strings.Contains(redis, `data-kind="no fault"`) || !strings.Contains(redis, "not run") {
		t.Errorf("redis row: want a no-fault chip and no unfenced run:\n%s", redis)
	}
}

func TestScheduleKinds(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "no fault",
		"none":                       "no fault",
		"pause:target=leader,for=4s": "pause",
		"partition:shape=leader-from-store,mode=drop,at=1xTTL; evict:target=leader,at=2xTTL":       "partition+evict",
		"clock:op=bump,delta=+10xTTL + kill:target=leader,at=8s + kill:target=leader,on=fault-end": "clock+kill",
		"pause-leader": "pause-leader",
	} {
		if got := kindLabel(scheduleKinds(in)); got != want {
			t.Errorf("kinds of %q = %q, want %q", in, got, want)
		}
	}
}

func TestCombineJUnit(t *testing.T) {
	store := makeStore(t)
	paths, _ := filepath.Glob(filepath.Join(store, "*", "2*", JUnitFile))
	if len(paths) != 3 {
		t.Fatalf("%d junit files", len(paths))
	}
	out := filepath.Join(t.TempDir(), "matrix.xml")
	if err := CombineJUnit(paths, out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 3 || doc.Tests != 3*len(JUnitCheckers) || doc.Failures < 1 {
		t.Fatalf("combined: %d suites, %d tests, %d failures", len(doc.Suites), doc.Tests, doc.Failures)
	}
	bad := filepath.Join(t.TempDir(), "x.xml")
	os.WriteFile(bad, []byte("<html></html>"), 0o644)
	if err := CombineJUnit([]string{bad}, out); err == nil || !strings.Contains(err.Error(), "not a JUnit") {
		t.Fatalf("want a clear error for a non-JUnit file, got %v", err)
	}
}

func TestServeRefusesEscapes(t *testing.T) {
	store := makeStore(t)
	if err := RenderIndex(store); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(store), "secret.txt")
	os.WriteFile(outside, []byte("TOPSECRET"), 0o644)
	os.Symlink(outside, filepath.Join(store, "evil-link"))
	os.Symlink("/etc", filepath.Join(store, "etc-link"))
	h, closeRoot, err := StoreHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRoot()
	srv := httptest.NewServer(h)
	defer srv.Close()

	get := func(raw string) (int, string, http.Header) {
		t.Helper()
		// A raw request line, so the client does not clean the path for us.
		req, err := http.NewRequest("GET", srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = raw
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	for _, p := range []string{
		"/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/..%2fsecret.txt", "/%252e%252e/secret.txt",
		"/etcd-etcd-election-pause-leader/../../secret.txt", "/..\\secret.txt", "/%5c..%5csecret.txt",
		"/evil-link", "/etc-link/passwd", "//etc/passwd", "/etc/passwd", "/%00",
	} {
		code, body, _ := get(p)
		t.Logf("GET %s → %d %s", p, code, strings.TrimSpace(body))
		if (code != 400 && code != 403 && code != 404) || strings.Contains(body, "TOPSECRET") || strings.Contains(body, "root:") {
			t.Errorf("GET %s: %d %q — must be refused", p, code, body)
		}
	}
	// What is inside is served, read-only, logs as text.
	if code, body, _ := get("/"); code != 200 || !strings.Contains(body, "leaderboard") {
		t.Errorf("GET /: %d", code)
	}
	if code, _, _ := get("/etcd-etcd-election-pause-leader/latest/report.html"); code != 200 {
		t.Errorf("latest link inside the store: %d", code)
	}
	code, _, hdr := get("/etcd-etcd-election-pause-leader/latest/logs/c1.log")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") || hdr.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("log: %d %v", code, hdr)
	}
	req, _ := http.NewRequest("PUT", srv.URL+"/x", strings.NewReader("x"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT must be refused: %v %v", resp, err)
	}
}
