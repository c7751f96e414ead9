package runfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFileRules(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	os.Mkdir(run, 0o755)
	write := func(name, content string) string {
		p := filepath.Join(run, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("config.json", `{"a":1}`)
	if b, err := ReadFile(filepath.Join(run, "config.json"), MaxJSON); err != nil || string(b) != `{"a":1}` {
		t.Fatalf("a regular file: %q %v", b, err)
	}
	// A symlink inside the run directory is followed; one out of it is refused.
	os.Symlink("config.json", filepath.Join(run, "inside.json"))
	if b, err := ReadFile(filepath.Join(run, "inside.json"), MaxJSON); err != nil || string(b) != `{"a":1}` {
		t.Fatalf("a symlink to a sibling: %q %v", b, err)
	}
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("s3cret"), 0o644)
	for name, target := range map[string]string{"out.json": secret, "zero.json": "/dev/zero", "environ.json": "/proc/self/environ", "up.json": "../secret"} {
		os.Symlink(target, filepath.Join(run, name))
		b, err := ReadFile(filepath.Join(run, name), MaxJSON)
		if !errors.Is(err, ErrOutside) || len(b) != 0 {
			t.Errorf("%s -> %s: %q %v, want ErrOutside", name, target, b, err)
		}
	}
	// A FIFO is refused at once, not waited on (no writer ever comes).
	fifo := filepath.Join(run, "results.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(fifo, MaxJSON); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("a FIFO: %v, want ErrNotRegular naming a FIFO", err)
	}
	if _, err := Open(run, MaxJSON); !errors.Is(err, ErrNotRegular) {
		t.Errorf("a directory: %v", err)
	}
	// Size limits, also for a file read as a stream.
	big := write("history.jsonl", strings.Repeat("x", 100))
	if _, err := ReadFile(big, 99); !errors.Is(err, ErrTooLarge) {
		t.Errorf("100 bytes with a limit of 99: %v", err)
	}
	if b, err := ReadFile(big, 100); err != nil || len(b) != 100 {
		t.Errorf("100 bytes with a limit of 100: %d %v", len(b), err)
	}
	if _, err := ReadFile(filepath.Join(run, "missing.json"), MaxJSON); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want os.ErrNotExist", err)
	}
}
