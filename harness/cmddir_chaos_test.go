//go:build chaos

package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A candidate directory runs whole (launcher + sources in a subdirectory), and the variant
// comes from --candidate-arg and --candidate-env: the launcher refuses to start without both,
// so a valid run with an election shows they arrived.
func TestRunCandidateDirectory(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "lib"), 0o755)
	src, err := os.ReadFile(filepath.Join("..", "examples", "python", "candidate.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lib", "candidate.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	launcher := "#!/bin/sh\n" +
		"[ \"$1\" = token-variant ] && [ \"$VARIANT\" = b ] || { echo \"want argument token-variant and VARIANT=b, got '$1' '$VARIANT'\" >&2; exit 3; }\n" +
		"exec python3 \"$(dirname \"$0\")/lib/candidate.py\"\n"
	if err := os.WriteFile(filepath.Join(dir, candidateDirEntry), []byte(launcher), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t, "redis", "")
	cfg.CandidateCmd = dir
	cfg.CandidatePackages = []string{"python3", "python3-redis"}
	cfg.CandidateArgs = []string{"token-variant"}
	cfg.CandidateEnv = []string{"VARIANT=b"}
	cfg.Until = "writes=20"
	out, events := runAndRead(t, runCtx(t), cfg)
	if out.Verdict != VerdictValid || len(out.Leaders) == 0 {
		t.Fatalf("verdict %s, leaders %v (reasons %v): the directory's candidate did not run as a variant", out.Verdict, out.Leaders, out.Reasons)
	}
	if len(events) == 0 {
		t.Fatal("no history")
	}
	assertCmdDirGone(t, out.RunDir)
	b, err := os.ReadFile(filepath.Join(out.RunDir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var rc RunConfig
	if err := json.Unmarshal(b, &rc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rc.Flags.CandidateArgs, cfg.CandidateArgs) || !slices.Equal(rc.Flags.CandidateEnv, cfg.CandidateEnv) {
		t.Errorf("config.json flags %+v do not record the variant", rc.Flags)
	}
}
