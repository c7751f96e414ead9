package runfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A file the user named: a symlink is followed (the user chose it), but a FIFO, a device or
// a file above the limit is refused at once, without blocking or allocating its size.
func TestReadInputRules(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(t.TempDir(), "corpus.json")
	if err := os.WriteFile(elsewhere, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	os.Symlink(elsewhere, link)
	if b, err := ReadInput(link, MaxJSON); err != nil || string(b) != `{}` {
		t.Fatalf("a symlink to a file in another directory: %q %v", b, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	if err := os.WriteFile(sparse, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 20<<30); err != nil { // 20 GB, no blocks on disk
		t.Fatal(err)
	}
	zeroLink := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zeroLink)
	for _, c := range []struct {
		path, want string
		is         error
	}{
		{fifo, "a FIFO", ErrNotRegular},
		{"/dev/zero", "a device", ErrNotRegular},
		{zeroLink, "a device", ErrNotRegular},
		{dir, "a directory", ErrNotRegular},
		{sparse, "21474836480 bytes", ErrTooLarge},
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadInput(c.path, 1<<30); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
				t.Errorf("%s: %v, want %v naming the path and %q", c.path, err, c.is, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadInput still blocked after 5s", c.path)
		}
	}
	if _, err := ReadInput(filepath.Join(dir, "missing"), MaxJSON); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want os.ErrNotExist", err)
	}
}

// WriteFile refuses to rename over anything but a regular file, and leaves it as it was.
func TestWriteFileRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("kept"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	for path, want := range map[string]string{fifo: "a FIFO", link: "a symlink", dangling: "a symlink", sub: "a directory"} {
		before, _ := os.Lstat(path)
		err := WriteFile(path, []byte("new"), 0o644)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "give the path of a regular file") {
			t.Errorf("%s: %v, want ErrNotRegular naming %s", path, err, want)
		}
		after, err := os.Lstat(path)
		if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
			t.Errorf("%s was replaced: %v -> %v (%v)", path, before.Mode(), after, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "kept" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 5 {
		t.Errorf("a refused write left files behind: %v", ents)
	}
}

// WriteFile replaces a regular file whole; writers at once use temporary files of their own
// (a fixed path.tmp let one writer rename the other's half-written file).
func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	os.WriteFile(path, []byte("old"), 0o600)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			data := []byte(strings.Repeat(string(rune('a'+i)), 1<<16))
			if err := WriteFile(path, data, 0o644); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	b, err := os.ReadFile(path)
	if err != nil || len(b) != 1<<16 || strings.Trim(string(b), string(b[:1])) != "" {
		t.Errorf("after 8 writers at once: %d bytes, mixed=%v, %v", len(b), strings.Trim(string(b), string(b[:1])) != "", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}
