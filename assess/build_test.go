package assess

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
)

// A Go main package directory given as the candidate command is built static, also by an
// absolute path from another working directory (a user's module).
func TestGoPackageCandidateIsBuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds examples/go (a few seconds; its dependencies come from the module cache)")
	}
	pkg, err := filepath.Abs("../examples/go")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SPLITBRAIN_CACHE_DIR", t.TempDir())
	r := &runner{opts: Options{Store: "etcd", CandidateCmd: []string{pkg}, OutDir: t.TempDir()}}
	k, err := r.caseFor(Check{Name: "kill-leader", Fault: "kill-leader", Paced: true, Duration: time.Minute, Resource: ResourceUnfenced})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(k.Config.CandidateCmd)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("candidate %s: %v (want the built executable)", k.Config.CandidateCmd, err)
	}
	// A resumed assessment is bound to the built binary, which also covers the packages it
	// imports from outside its directory.
	sub, err := subjectOf(context.Background(), r.opts)
	if want, _ := harness.CandidateDigest(k.Config.CandidateCmd); err != nil || sub.Content != want || want == "" {
		t.Errorf("subject content %q (%v), want the built binary's %q", sub.Content, err, want)
	}
}
