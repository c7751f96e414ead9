package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/assess"
)

func TestAssessHelpAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	runMain([]string{"assess", "--help"}, &out, &errb)
	help := out.String() + errb.String()
	for _, n := range assess.Names() {
		if !strings.Contains(help, n) {
			t.Errorf("assess --help does not name check %s", n)
		}
	}
	out.Reset()
	errb.Reset()
	code := runMain([]string{"assess", "--store", "etcd", "--checks", "pause", "--budget", "0s"}, &out, &errb)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	for _, want := range []string{"nothing to assess", "--budget 0s"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	out.Reset()
	errb.Reset()
	if code := runMain([]string{"assess", "--store", "redis", "--recipe", "redis-setnx", "--list"}, &out, &errb); code != exitValid {
		t.Fatalf("--list: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "zombie-window") || !strings.Contains(out.String(), "store-split              left out") {
		t.Errorf("--list on redis:\n%s", out.String())
	}
}
