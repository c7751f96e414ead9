package main

import (
	"bytes"
	"strings"
	"testing"
)

// Bad input never reaches Docker: it exits 64 with a message naming the valid values.
func TestImagesUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"images"}, "build or list"},
		{[]string{"images", "push"}, "build or list"},
		{[]string{"images", "build", "--profile", "hub"}, `"official"`},
		{[]string{"images", "build", "--role", "etcd,mysql"}, "mysql"},
		{[]string{"images", "list", "extra"}, "unexpected argument"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := runMain(c.args, &out, &errOut)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d", c.args, code, exitUsage)
		}
		if !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: stderr %q lacks %q", c.args, errOut.String(), c.want)
		}
	}
	t.Setenv("SPLITBRAIN_IMAGE_PROFILE", "nope")
	var out, errOut bytes.Buffer
	if code := runMain([]string{"images", "list"}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "SPLITBRAIN_IMAGE_PROFILE") {
		t.Errorf("bad env profile: exit %d, stderr %q", code, errOut.String())
	}
}
