package images

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A second process that needs the same server finds its stamp and runs no go build; a touched
// binary or a changed input builds again.
func TestServerBuildStamp(t *testing.T) {
	t.Setenv(EnvCacheDir, t.TempDir())
	ctx := context.Background()
	m := serverModule{name: "stamp-server", version: "v0", dir: "internal/images/testdata/stamp-server", pkg: "."}
	build := func() (string, string) {
		t.Helper()
		var log bytes.Buffer
		out, err := m.binary(ctx, &log)
		if err != nil {
			t.Fatalf("binary: %v\n%s", err, log.String())
		}
		return out, log.String()
	}
	ran := func(log string) bool { return strings.Contains(log, "images: go build stamp-server") }

	out, log := build()
	if !ran(log) {
		t.Fatalf("first build ran no go build:\n%s", log)
	}
	if _, log = build(); ran(log) || !strings.Contains(log, "built from these inputs already") {
		t.Fatalf("second build with a stamp ran go build:\n%s", log)
	}

	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(out, later, later); err != nil {
		t.Fatal(err)
	}
	if _, log = build(); !ran(log) {
		t.Fatalf("a binary touched since its stamp was not checked with go build:\n%s", log)
	}

	m.ldflags = "-X main.unused=1"
	if _, log = build(); !ran(log) {
		t.Fatalf("changed flags were not built:\n%s", log)
	}
	if _, log = build(); ran(log) {
		t.Fatalf("the stamp of the new flags was not used:\n%s", log)
	}
}

// The key covers every file of the wrapper module and the environment the build is given.
func TestBuildKeyCoversModuleFilesAndEnv(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.invalid/k\n\ngo 1.26\n")
	write("main.go", "package main\n\nfunc main() {}\n")
	m := serverModule{name: "k", pkg: "."}
	key := func(env []string) string {
		t.Helper()
		k, err := m.buildKey(ctx, dir, buildEnv(env))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key(nil)
	if key(nil) != base {
		t.Fatal("the same inputs gave two keys")
	}
	if key([]string{"SPLITBRAIN_UNRELATED=1"}) != base {
		t.Error("a variable go build ignores changed the key: every process would build again")
	}
	if key([]string{"GOFLAGS=-mod=mod"}) == base {
		t.Error("GOFLAGS did not change the key")
	}
	if key([]string{"GOAMD64=v3"}) == base {
		t.Error("GOAMD64 did not change the key")
	}
	write("go.sum", "example.invalid/dep v1.0.0 h1:x=\n")
	withSum := key(nil)
	if withSum == base {
		t.Error("a new go.sum did not change the key")
	}
	write("main.go", "package main\n\nfunc main() { println() }\n")
	if key(nil) == withSum {
		t.Error("an edited source file did not change the key")
	}
}
