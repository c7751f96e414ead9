package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input to replay and shrink: exit 64 with a message naming the problem.
func TestReplayShrinkUsage(t *testing.T) {
	root := t.TempDir()
	valid := filepath.Join(root, "redis-redis-setnx-x", "20261122T000000.000Z")
	os.MkdirAll(valid, 0o755)
	b, err := os.ReadFile("../../internal/runconfig/testdata/run/config.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(valid, "config.json"), b, 0o644)
	os.WriteFile(filepath.Join(valid, "results.json"), []byte(`{"verdict":"valid","reasons":[]}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "give one run directory"},
		{[]string{"replay", root, "--times", "0"}, "--times 0"},
		{[]string{"replay", root}, "not a run directory"},
		{[]string{"shrink", valid, "--tries", "0"}, "--tries must be >= 1"},
		{[]string{"shrink", valid}, "is valid: the run is not invalid"},
	} {
		var out, errb strings.Builder
		code := runMain(tc.args, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 64 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
