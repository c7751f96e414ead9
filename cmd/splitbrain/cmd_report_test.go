package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportCommandUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"report"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "RUN_DIR") {
		t.Fatalf("no args: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	dir := t.TempDir()
	if code := runMain([]string{"report", dir, "--index"}, &out, &errb); code != exitUsage {
		t.Fatalf("RUN_DIR with --index: exit %d", code)
	}
	errb.Reset()
	if code := runMain([]string{"report", dir}, &out, &errb); code != exitHarness || !strings.Contains(errb.String(), "splitbrain check") {
		t.Fatalf("run dir without results: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := runMain([]string{"report", "--index", "--store", dir}, &out, &errb); code != exitValid {
		t.Fatalf("--index: exit %d, %q", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		t.Fatal(err)
	}
	if code := runMain([]string{"report", "--index", "--store", filepath.Join(dir, "nope")}, &out, &errb); code != exitHarness {
		t.Fatalf("missing store: exit %d", code)
	}
}

func TestServeCommandUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"serve", "--addr", "nonsense"}, &out, &errb); code != exitUsage {
		t.Fatalf("bad addr: exit %d", code)
	}
	if code := runMain([]string{"serve", "--store", filepath.Join(t.TempDir(), "nope")}, &out, &errb); code != exitHarness {
		t.Fatalf("missing store: exit %d %q", code, errb.String())
	}
}

func TestReportMergeUsage(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	for _, args := range [][]string{
		{"report", "--merge", filepath.Join(dir, "out")},                          // no shards
		{"report", "--merge", dir, filepath.Join(dir, "a")},                       // OUT exists
		{"report", "--merge", filepath.Join(dir, "out"), filepath.Join(dir, "a")}, // shard missing
	} {
		errb.Reset()
		if code := runMain(args, &out, &errb); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%q)", args, code, exitUsage, errb.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a refused merge created OUT")
	}
	if code := runMain([]string{"matrix", "--shard", "3/2", "--list"}, &out, &errb); code != exitUsage {
		t.Errorf("--shard 3/2: exit %d", code)
	}
}
