package splitbraintest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cached binary is replaced by rename only when it is a regular file: a symlink in its
// place is refused and left as it was.
func TestInstallBinaryRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("kept"), 0o644)
	final := filepath.Join(dir, "splitbraintest-splitbrain")
	os.Symlink(target, final)
	tmp := filepath.Join(dir, "built")
	os.WriteFile(tmp, []byte("binary"), 0o755)
	if err := installBinary(tmp, final); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("over a symlink: %v, want a refusal", err)
	}
	if fi, err := os.Lstat(final); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced (%v)", err)
	}
	os.Remove(final)
	os.WriteFile(tmp, []byte("binary"), 0o755)
	if err := installBinary(tmp, final); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(final); string(b) != "binary" {
		t.Errorf("installed %q", b)
	}
}
