package main

import (
	"io"
	"strings"
	"testing"
)

func TestParseRunDirArgs(t *testing.T) {
	for _, c := range []struct {
		args    []string
		dir     string
		wantErr string
	}{
		{[]string{"d", "--json"}, "d", ""},
		{[]string{"--json", "d"}, "d", ""},
		{[]string{"--json"}, "", ""},
		{nil, "", ""},
		{[]string{"d", "e"}, "", `unexpected argument "e"`},
		{[]string{"--json", "d", "e"}, "", `unexpected argument "e"`},
		{[]string{"d", "--json", "e"}, "", `unexpected argument "e"`},
		{[]string{"--nope"}, "", "flag provided but not defined"},
	} {
		fs := newFlags("check", io.Discard)
		fs.Bool("json", false, "")
		dir, err := parseRunDirArgs(fs, c.args)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: error %v, want %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil || dir != c.dir {
			t.Errorf("%q: dir %q err %v, want %q", c.args, dir, err, c.dir)
		}
	}
	if err := requireDir(t.TempDir() + "/missing"); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("requireDir on a missing path: %v", err)
	}
}
