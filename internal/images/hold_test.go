package images

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// An image a process holds is not claimed for removal, by it or by another process; one no
// process holds is, and its use file goes with it.
func TestPruneSparesAHeldImage(t *testing.T) {
	t.Setenv(EnvCacheDir, t.TempDir())
	const mine, free, theirs = "splitbrain.invalid/candidate:aaaa", "splitbrain.invalid/candidate:bbbb", "splitbrain.invalid/candidate:cccc"
	holdImage(mine)
	t.Cleanup(func() {
		if f, ok := holds.LoadAndDelete(mine); ok {
			f.(*os.File).Close()
		}
	})
	if _, ok := claimForRemoval(mine); ok {
		t.Fatal("claimed an image this process holds")
	}
	release, ok := claimForRemoval(free)
	if !ok {
		t.Fatal("could not claim an image nobody holds")
	}
	release()
	if name, _ := useFile(free); fileExists(name) {
		t.Errorf("the removed image's use file %s is left", name)
	}
	// Another process holding theirs: flock(1) keeps a shared lock on its use file.
	name, err := useFile(theirs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Fatalf("flock(1) (util-linux) is needed for this test: %v", err)
	}
	// The marker is written once the lock is held.
	holder := exec.Command("flock", "--shared", name, "sh", "-c", "touch \"$0.ready\"; sleep 30", name)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	for deadline := time.Now().Add(10 * time.Second); !fileExists(name + ".ready"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("flock did not take the lock")
		}
	}
	if _, ok := claimForRemoval(theirs); ok {
		t.Fatal("claimed an image another process holds")
	}
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
