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
