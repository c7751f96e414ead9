//go:build chaos

package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness/platform"
)

// TestUpRedisFor runs `splitbrain up --store redis --for 2s` in-process: it must exit 0,
// print endpoints, version and ready time, and leave nothing of its run behind.
func TestUpRedisFor(t *testing.T) {
	var out, errb bytes.Buffer
	start := time.Now()
	code := runMain([]string{"up", "--store", "redis", "--for", "2s", "--log-dir", t.TempDir()}, &out, &errb)
	t.Logf("up took %v\n%s", time.Since(start), out.String())
	if code != exitValid {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	for _, want := range []string{"store     redis 7.", "ready in", "network redis:6379", "host localhost:", "torn down in"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	m := regexp.MustCompile(`(?m)^run\s+(\S+)$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatal("no run id printed")
	}
	eng, err := platform.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	left, err := eng.Leftovers(context.Background(), m[1])
	if err != nil || !left.Empty() {
		t.Fatalf("run %s left %s (%v)", m[1], left, err)
	}
	// clean of that run finds nothing more.
	out.Reset()
	if code := runMain([]string{"clean", "--run", m[1]}, &out, &errb); code != exitValid || !strings.Contains(out.String(), "nothing to remove") {
		t.Fatalf("clean --run: exit %d, %q", code, out.String())
	}
}
