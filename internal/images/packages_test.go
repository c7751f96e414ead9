package images

import (
	"strings"
	"testing"
)

func TestParsePackages(t *testing.T) {
	got, err := ParsePackages(" python3-redis,python3, python3-redis ,,curl")
	if err != nil || strings.Join(got, " ") != "curl python3 python3-redis" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"Python3", "curl;rm -rf /", "a", "python3:amd64", "-x"} {
		if _, err := ParsePackages(bad); err == nil || !strings.Contains(err.Error(), "not a Debian package name") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	many := ""
	for i := 0; i <= maxPackages; i++ {
		many += "pkg" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ","
	}
	if _, err := ParsePackages(many); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("too many packages: %v", err)
	}
	df := packagesDockerfile("splitbrain.invalid/base:abc", []string{"curl", "python3"})
	if !strings.Contains(df, "FROM splitbrain.invalid/base:abc\n") || !strings.Contains(df, "--no-install-recommends curl python3 ") {
		t.Errorf("dockerfile:\n%s", df)
	}
}
