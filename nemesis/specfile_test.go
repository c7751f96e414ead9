package nemesis

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// --nemesis @FILE reads regular files of at most MaxSpecFile bytes (issue 14 item 5).
func TestSpecFileBounded(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "ok.spec")
	os.WriteFile(good, []byte("# comment\npause:for=2s\n"), 0o644)
	if s, err := Parse("@" + good); err != nil || len(s.Faults) != 1 {
		t.Fatalf("regular file: %v %v", s, err)
	}
	big := filepath.Join(dir, "big.spec")
	os.WriteFile(big, []byte(strings.Repeat("#", MaxSpecFile+1)), 0o644)
	binary := filepath.Join(dir, "environ")
	os.WriteFile(binary, []byte("SECRET=hunter2\x00HOME=/root\x00"), 0o644)
	latin1 := filepath.Join(dir, "latin1")
	os.WriteFile(latin1, []byte("pause:for=2s # caf\xe9\n"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero":      "not a regular file",
		dir:              "not a regular file",
		fifo:             "not a regular file",
		big:              "limit",
		binary:           "not a text file (a NUL byte at offset 14)",
		latin1:           "not UTF-8 text",
		"/nonexistent/x": "no such file",
	} {
		done := make(chan error, 1)
		go func() { _, err := Parse("@" + path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("@%s: %v; want an error with %q", path, err, want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("@%s: the error echoes the file's content: %v", path, err)
			}
		case <-time.After(time.Minute): // only ends a hung test
			t.Fatalf("@%s hangs", path)
		}
	}
}

func TestProbabilityRefusesNaNAndTiny(t *testing.T) {
	for _, p := range []string{"NaN", "nan", "1e-320", "0.0000001", "0", "-0", "1.5", "Inf"} {
		if err := checkProbability(p); err == nil {
			t.Errorf("p=%s accepted", p)
		}
	}
	for _, p := range []string{"0.000001", "0.3", "1"} {
		if err := checkProbability(p); err != nil {
			t.Errorf("p=%s refused: %v", p, err)
		}
	}
}
