package assess

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
}
