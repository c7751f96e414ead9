package rootfs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func useWorkDir(t *testing.T) string {
	dir := t.TempDir()
	old := WorkDir
	WorkDir = dir
	t.Cleanup(func() { WorkDir = old })
	return dir
}

// The tag is the one images built before this package existed carry: a changed hash input
// would rebuild every base image (and every image on it) on every machine.
func TestRefIsTheBaseImagesTag(t *testing.T) {
	t.Setenv(EnvSalt, "")
	if got, want := Ref(), "splitbrain.invalid/base:bookworm-1695b1ec5fff"; got != want {
		t.Errorf("Ref() = %s, want %s", got, want)
	}
	t.Setenv(EnvSalt, "s1")
	if Ref() == "splitbrain.invalid/base:bookworm-1695b1ec5fff" {
		t.Error("a salt does not change the tag")
	}
}

// A second locker waits until the first lets go; one whose context ends gives up.
func TestLockExcludes(t *testing.T) {
	useWorkDir(t)
	unlock, err := Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx); err == nil {
		t.Fatal("a second lock was taken while the first was held")
	}
	got := make(chan error, 1)
	go func() {
		u, err := Lock(t.Context())
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting locker did not get the lock after the unlock")
	}
}

// A prepared tree is handed over once, under a name of its own; Prepare keeps it and removes
// trees of other keys and remains of interrupted runs without running debootstrap.
func TestTakeAndPrepare(t *testing.T) {
	dir := useWorkDir(t)
	if _, ok := Take(); ok || Prepared() {
		t.Fatal("a tree is prepared in an empty directory")
	}
	stale := []string{filepath.Join(dir, prefix+"0123456789ab"), filepath.Join(dir, prefix+"making-1234")}
	for _, d := range append(stale, preparedPath()) {
		if err := os.MkdirAll(filepath.Join(d, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Prepare(t.Context(), "http://unused.invalid/debian", os.Stderr); err != nil {
		t.Fatalf("Prepare with a tree there: %v", err)
	}
	for _, d := range stale {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s was left", d)
		}
	}
	got, ok := Take()
	if !ok || !strings.HasPrefix(got, preparedPath()+".taken-") {
		t.Fatalf("Take() = %q, %v", got, ok)
	}
	if _, err := os.Stat(filepath.Join(got, "etc")); err != nil {
		t.Errorf("the taken tree lost its contents: %v", err)
	}
	if _, ok := Take(); ok || Prepared() {
		t.Error("the tree was handed over twice")
	}
}

func TestCleanWritesFilesAndDropsCaches(t *testing.T) {
	dir := t.TempDir()
	deb := filepath.Join(dir, "var/cache/apt/archives/x.deb")
	os.MkdirAll(filepath.Dir(deb), 0o755)
	os.WriteFile(deb, []byte("x"), 0o644)
	if err := Clean(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(deb); err == nil {
		t.Error("a downloaded package was kept")
	}
	for _, f := range Files {
		fi, err := os.Stat(filepath.Join(dir, f.Path))
		if err != nil || fi.Mode().Perm() != f.Mode {
			t.Errorf("%s: %v, mode %v", f.Path, err, fi)
		}
	}
}

// A tree a killed debootstrap left with a mount inside (its /proc) is removed without
// reaching through the mount: the mounted directory's own files stay.
func TestRemoveTreeUnmountsFirst(t *testing.T) {
	tree, outside := t.TempDir(), t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(tree, "proc")
	if err := os.MkdirAll(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(outside, mp, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount here (needs root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mp, syscall.MNT_DETACH) })
	if got, err := mountsBelow(tree); err != nil || len(got) != 1 || got[0] != mp {
		t.Fatalf("mounts below the tree: %v %v", got, err)
	}
	if err := RemoveTree(tree); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the removal reached through the mount: %v", err)
	}
	if _, err := os.Stat(tree); !os.IsNotExist(err) {
		t.Errorf("the tree is still there: %v", err)
	}
}
