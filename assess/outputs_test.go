package assess

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The resume state and the scorecard are written by rename: a FIFO or a symlink where one
// goes is refused and left as it was, not replaced.
func TestStateAndScorecardRefuseNonRegular(t *testing.T) {
	out := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("kept"), 0o644)
	statePath := filepath.Join(out, StateFile)
	if err := os.Symlink(target, statePath); err != nil {
		t.Fatal(err)
	}
	st := &state{path: statePath, Results: map[string]CheckResult{}}
	if err := st.save(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("state over a symlink: %v, want a refusal", err)
	}
	if fi, err := os.Lstat(statePath); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the state symlink was replaced (%v)", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "kept" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	fifo := filepath.Join(out, ScorecardJSON)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sc := &Scorecard{}
	if err := WriteScorecard(sc, out); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("scorecard.json over a FIFO: %v, want a refusal", err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced (%v)", err)
	}
}
