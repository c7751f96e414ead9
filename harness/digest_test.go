package harness

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The digest binds an assessment to the candidate's content: a rebuilt executable, a changed
// file, mode or name in a candidate directory each give another one; a FIFO is refused at
// once instead of blocking the reader.
func TestCandidateDigest(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "cand.sh")
	write := func(p, s string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	digest := func(p string) string {
		t.Helper()
		d, err := CandidateDigest(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
			t.Fatalf("digest %q: want sha256:<64 hex>", d)
		}
		return d
	}
	write(exe, "#!/bin/sh\nexit 0\n", 0o755)
	a := digest(exe)
	if digest(exe) != a {
		t.Error("the same file gave two digests")
	}
	write(exe, "#!/bin/sh\nexit 1\n", 0o755)
	if digest(exe) == a {
		t.Error("a rebuilt executable kept its digest")
	}

	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(filepath.Join(tree, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(tree, "candidate"), "#!/bin/sh\nexec lib/run\n", 0o755)
	write(filepath.Join(tree, "lib", "run"), "one", 0o755)
	before := digest(tree)
	for _, change := range []struct {
		name string
		do   func()
	}{
		{"a file's bytes", func() { write(filepath.Join(tree, "lib", "run"), "two", 0o755) }},
		{"a file's mode", func() { write(filepath.Join(tree, "lib", "run"), "two", 0o644) }},
		{"a file's name", func() { os.Rename(filepath.Join(tree, "lib", "run"), filepath.Join(tree, "lib", "run2")) }},
	} {
		change.do()
		if d := digest(tree); d == before {
			t.Errorf("a change of %s kept the directory's digest", change.name)
		} else {
			before = d
		}
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := CandidateDigest(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v, want refused as not a regular file", err)
	}
}
