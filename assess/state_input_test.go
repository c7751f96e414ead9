package assess

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The resume state is read bounded and without blocking: a FIFO in its place hung the
// assessment (SIGTERM did not end it), a link to /dev/zero exhausted memory.
func TestLoadStateRefusesNonRegular(t *testing.T) {
	for name, mk := range map[string]func(string) error{
		"not a regular file (a FIFO)":   func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"not a regular file (a device)": func(p string) error { return os.Symlink("/dev/zero", p) },
		"file too large": func(p string) error {
			os.WriteFile(p, nil, 0o644)
			return os.Truncate(p, 3<<30)
		},
	} {
		out := t.TempDir()
		if err := mk(filepath.Join(out, StateFile)); err != nil {
			t.Fatal(err)
		}
		o := Options{Store: "etcd", Recipe: "etcd-election", OutDir: out}
		done := make(chan error, 1)
		go func() { _, err := loadState(context.Background(), o); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "remove it") {
				t.Errorf("%s: %v, want an error saying so and what to do", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: loadState still running after 10s", name)
		}
	}
}
