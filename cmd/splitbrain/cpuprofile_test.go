package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCPUProfileWrittenWhereAsked(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "cpu")
	t.Setenv(envCPUProfile, prefix)
	stop, err := startCPUProfile()
	if err != nil {
		t.Fatal(err)
	}
	stop()
	b, err := os.ReadFile(fmt.Sprintf("%s.%d", prefix, os.Getpid()))
	if err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("profile %s.<pid>: %v, %d bytes; want a gzipped pprof profile", prefix, err, len(b))
	}

	t.Setenv(envCPUProfile, filepath.Join(t.TempDir(), "no-such-dir", "cpu"))
	if _, err := startCPUProfile(); err == nil || !strings.Contains(err.Error(), envCPUProfile) {
		t.Errorf("an unwritable prefix: %v; want an error naming %s", err, envCPUProfile)
	}
	t.Setenv(envCPUProfile, "")
	if stop, err := startCPUProfile(); err != nil {
		t.Errorf("unset: %v", err)
	} else {
		stop()
	}
}
