package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
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

// The help names every role images.Roles has (it was a hand list without dynamodb, consul
// and kubernetes).
func TestImagesHelpNamesEveryRole(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runMain([]string{"images", "--help"}, &out, &errOut); code != exitValid {
		t.Fatalf("images --help: exit %d (%s)", code, errOut.String())
	}
	for _, r := range images.Roles {
		if !strings.Contains(out.String(), string(r)) {
			t.Errorf("images --help does not name role %s: %s", r, out.String())
		}
	}
}
