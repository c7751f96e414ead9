package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A real go test -json of a throwaway module: a passing test, a failing one, a failing
// subtest, a package that does not compile, one that panics.
func TestSummarizeRealGoTest(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/tt\n\ngo 1.22\n",
		"good/good_test.go": `package good
import ("testing"; "time")
func TestQuiet(t *testing.T) { t.Log("quiet-pass-log"); time.Sleep(300 * time.Millisecond) }
func TestLoud(t *testing.T) { t.Log("loud-fail-log"); t.Error("loud-fail-error") }
func TestParent(t *testing.T) {
	t.Run("ok", func(t *testing.T) { t.Log("sub-pass-log") })
	t.Run("bad", func(t *testing.T) { t.Error("sub-fail-error") })
}
`,
		"broken/broken_test.go": "package broken\nimport \"testing\"\nfunc TestX(t *testing.T) { undefinedThing() }\n",
		"panics/panics_test.go": "package panics\nimport \"testing\"\nfunc TestBoom(t *testing.T) { t.Log(\"before-boom\"); panic(\"boom-here\") }\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	stream, _ := cmd.Output() // fails, as it should: the failures are the point
	var out bytes.Buffer
	times, spans, failed, err := summarize(bytes.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !failed {
		t.Error("failures not noticed")
	}
	for _, want := range []string{"loud-fail-log", "loud-fail-error", "--- FAIL: TestLoud", "sub-fail-error",
		"--- FAIL: TestParent/bad", "--- FAIL: TestParent", "undefinedThing", "boom-here", "before-boom",
		"FAIL\texample.com/tt/good", "FAIL\texample.com/tt/panics"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"quiet-pass-log", "sub-pass-log", "=== RUN", "\nPASS\n"} {
		if strings.Contains(got, not) {
			t.Errorf("output shows %q, which plain go test does not:\n%s", not, got)
		}
	}
	i := slices.IndexFunc(times, func(x timing) bool { return x.test == "TestQuiet" })
	if i < 0 || times[i].elapsed.Seconds() < 0.3 || times[i].result != "pass" {
		t.Errorf("TestQuiet's time: %+v", times)
	}
	if !slices.ContainsFunc(times, func(x timing) bool { return x.test == "TestParent/bad" && x.result == "fail" }) {
		t.Errorf("the failed subtest has no time: %+v", times)
	}
	var slow bytes.Buffer
	writeSlowest(&slow, times, 1)
	if !strings.Contains(slow.String(), "TestQuiet") || strings.Count(slow.String(), "\n") != 2 {
		t.Errorf("slowest: %q", slow.String())
	}
	// good sleeps 0.3 s, so it cannot end before it starts or last less than that.
	var good *span
	for i := range spans {
		if spans[i].pkg == "example.com/tt/good" {
			good = &spans[i]
		}
	}
	if good == nil || good.end.Sub(good.start) < 300*time.Millisecond {
		t.Errorf("good's span: %+v", spans)
	}
	// A package of two seconds is listed, one of half a second is not.
	var order bytes.Buffer
	long := span{pkg: "example.com/tt/long", start: good.start, end: good.start.Add(2 * time.Second)}
	short := span{pkg: "example.com/tt/short", start: good.start, end: good.start.Add(time.Second / 2)}
	writeSpans(&order, []span{long, short})
	if !strings.Contains(order.String(), "(1 of 2 ") || !strings.Contains(order.String(), "(    2s)  example.com/tt/long") {
		t.Errorf("packages that ran a second: %q", order.String())
	}
	path := filepath.Join(t.TempDir(), "times.tsv")
	if err := writeTimes(path, times); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != len(times)+1 || !strings.Contains(lines[1], "TestQuiet") {
		t.Errorf("times file:\n%s", b)
	}
}
