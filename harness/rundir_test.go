package harness

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRunDirName(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 4, 5, 678_000_000, time.FixedZone("x", 3600))
	if got := RunDirName(at); got != "20261122T020405.678Z" {
		t.Fatalf("RunDirName = %q", got)
	}
	// Names sort in time order.
	if a, b := RunDirName(at), RunDirName(at.Add(time.Millisecond)); a >= b {
		t.Fatalf("%q does not sort before %q", a, b)
	}
}

func TestCreateRunDir(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC)
	d1, err := CreateRunDir(root, "etcd-x-none", now)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "etcd-x-none", "20261122T030405.000Z"); d1 != want {
		t.Fatalf("dir %q, want %q", d1, want)
	}
	if fi, err := os.Stat(filepath.Join(d1, LogsDir)); err != nil || !fi.IsDir() {
		t.Fatalf("no logs dir: %v", err)
	}
	// Same millisecond: a second directory, and latest follows it.
	d2, err := CreateRunDir(root, "etcd-x-none", now)
	if err != nil {
		t.Fatal(err)
	}
	if d2 != d1+"-2" {
		t.Fatalf("second dir %q", d2)
	}
	link := filepath.Join(root, "etcd-x-none", LatestLink)
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	if target != filepath.Base(d2) {
		t.Fatalf("latest -> %q, want %q (relative)", target, filepath.Base(d2))
	}
	if resolved, _ := filepath.EvalSymlinks(link); resolved != d2 {
		if r2, _ := filepath.EvalSymlinks(d2); resolved != r2 {
			t.Fatalf("latest resolves to %q", resolved)
		}
	}
	// No temporary link files left behind.
	entries, _ := os.ReadDir(filepath.Join(root, "etcd-x-none"))
	if len(entries) != 3 {
		t.Fatalf("entries: %v", entries)
	}
}

func TestCreateRunDirUnwritable(t *testing.T) {
	root := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(root, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateRunDir(root, "t", time.Now()); err == nil {
		t.Fatal("no error for a root that is a file")
	}
}

func TestWriteJSONAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	if err := writeJSON(p, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "{\n  \"a\": 1\n}\n" {
		t.Fatalf("content %q", b)
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Fatalf("temporary file left: %v", ents)
	}
}
