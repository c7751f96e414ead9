//go:build chaos

package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
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
	for _, want := range []string{"store     redis 7.", "ready in", "network redis:6379", "host 198.1", "torn down in"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	m := regexp.MustCompile(`(?m)^run\s+(\S+)$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatal("no run id printed")
	}
	platformtest.AssertNoLeftovers(t, platformtest.Connect(t, context.Background()), m[1])
	if t.Failed() {
		return
	}
	// clean of that run finds nothing more.
	out.Reset()
	if code := runMain([]string{"clean", "--run", m[1]}, &out, &errb); code != exitValid || !strings.Contains(out.String(), "nothing to remove") {
		t.Fatalf("clean --run: exit %d, %q", code, out.String())
	}
}
