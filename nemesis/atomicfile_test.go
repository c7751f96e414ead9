package nemesis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A clock file is replaced by rename: something other than a regular file in its place (a
// symlink) is refused and left as it was.
func TestWriteHostFileAtomicRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c1")
	if err := writeHostFileAtomic(p, []byte("1s\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "1s\n" {
		t.Fatalf("content %q", b)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("kept"), 0o644)
	link := filepath.Join(dir, "c2")
	os.Symlink(target, link)
	if err := writeHostFileAtomic(link, []byte("2s\n")); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a symlink: %v, want a refusal", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced (%v)", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("temporary files left: %v", ents)
	}
}
