package examples

import (
	"os"
	"strings"
	"testing"
)

// TestGotestUserCandidateIsExamplesGo: examples/gotest-user holds examples/go the way a
// user's module holds its own candidate (a copy, since it is a module of its own); only the
// package comment may differ, so a fix to one that misses the other fails here.
func TestGotestUserCandidateIsExamplesGo(t *testing.T) {
	for _, f := range []string{"main.go", "token.go", "token_broken.go"} {
		want, err := os.ReadFile("go/" + f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile("gotest-user/" + f)
		if err != nil {
			t.Fatal(err)
		}
		g, w := string(got), string(want)
		if f == "main.go" {
			g, w = fromPackage(g), fromPackage(w)
		}
		if g != w {
			t.Errorf("gotest-user/%s differs from go/%s below the package comment: copy the change over (cp examples/go/%s examples/gotest-user/, then restore its package comment)", f, f, f)
		}
	}
}

// fromPackage is a Go file from its package clause on.
func fromPackage(src string) string {
	if i := strings.Index(src, "\npackage "); i >= 0 {
		return src[i+1:]
	}
	return src
}
