package images

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// A process marks each candidate image it uses by holding a shared lock on the image's use
// file until it exits (holdImage); a prune, in any process, removes an image only while it
// holds that file exclusively (claimForRemoval). The prune after a build used to spare only
// images younger than candidatePruneGrace, and a make test beside a make chaos lost its
// candidate image that way: built 21 min earlier, ensured at a test's start, removed by the
// other process's prune while the test started its store, then "no such image" (2026-11-29).
// A lock dies with its process, so a crashed run protects nothing for long.

var holds sync.Map // ref → *os.File, open (and locked shared) until the process exits

// useFile is ref's use file in the cache directory.
func useFile(ref string) (string, error) {
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "in-use-"+strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".lock"), nil
}

// holdImage marks ref as used by this process until it exits. Best effort: without a
// writable cache directory the image is left unprotected, as before.
func holdImage(ref string) {
	if _, ok := holds.Load(ref); ok {
		return
	}
	name, err := useFile(ref)
	if err != nil {
		return
	}
	for range 10 {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
			f.Close()
			return
		}
		// A prune deletes the file of the image it removed, under its exclusive lock: a lock
		// taken on the deleted file protects nothing, so it is taken again on the new one.
		var held, now syscall.Stat_t
		if syscall.Fstat(int(f.Fd()), &held) == nil && syscall.Stat(name, &now) == nil && held.Ino == now.Ino && held.Dev == now.Dev {
			if _, loaded := holds.LoadOrStore(ref, f); loaded {
				f.Close()
			}
			return
		}
		f.Close()
	}
}

// claimForRemoval takes ref's use file exclusively; ok is false while any process (this one
// included) holds it. release deletes the file and drops the lock, after the removal.
func claimForRemoval(ref string) (release func(), ok bool) {
	name, err := useFile(ref)
	if err != nil {
		return func() {}, true
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return func() {}, true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { os.Remove(name); f.Close() }, true
}
