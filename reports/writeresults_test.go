package reports

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/checkers"
)

// `splitbrain check DIR` writes DIR/results.json by rename: a FIFO or symlink there is
// refused and left as it was.
func TestWriteResultsRefusesNonRegular(t *testing.T) {
	r := &checkers.Results{Verdict: "valid"}
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("kept"), 0o644)
	for name, mk := range map[string]func(string) error{
		"fifo":    func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"symlink": func(p string) error { return os.Symlink(target, p) },
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, checkers.ResultsFile)
		if err := mk(p); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Lstat(p)
		if _, err := WriteResults(dir, r); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
		if after, err := os.Lstat(p); err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
			t.Errorf("%s: results.json was replaced (%v)", name, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "kept" {
		t.Errorf("the symlink's target was written: %q", b)
	}
}
