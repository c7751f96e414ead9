package reports

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test when fn does not return: a reader that blocks on a FIFO never would.
func within(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s hung (a reader blocked on a FIFO?)", what)
		return nil
	}
}

// One hostile run directory in a shared store (a FIFO, a symlink to /dev/zero or out of
// the directory) must not hang, exhaust or leak into the index, the report or a merge.
func TestReadersRefuseHostileRunFiles(t *testing.T) {
	store := makeStore(t)
	plant := func(name string, how func(dir string)) string {
		dir := filepath.Join(store, "evil-"+name, "20250105T000000.000Z")
		writeRun(t, dir, defaultFixture())
		how(dir)
		return dir
	}
	fifo := func(file string) func(string) {
		return func(dir string) {
			os.Remove(filepath.Join(dir, file))
			if err := syscall.Mkfifo(filepath.Join(dir, file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	link := func(file, target string) func(string) {
		return func(dir string) {
			os.Remove(filepath.Join(dir, file))
			if err := os.Symlink(target, filepath.Join(dir, file)); err != nil {
				t.Fatal(err)
			}
		}
	}
	resultsFIFO := plant("results-fifo", fifo(ResultsFile))
	configFIFO := plant("config-fifo", fifo(ConfigFile))
	historyFIFO := plant("history-fifo", fifo(HistoryFile))
	zero := plant("results-zero", link(ResultsFile, "/dev/zero"))
	if err := within(t, "the index render", func() error { return RenderIndex(store) }); err != nil {
		t.Fatalf("the index of a store with hostile runs: %v", err)
	}
	page, _ := os.ReadFile(filepath.Join(store, IndexFile))
	if !strings.Contains(string(page), "20250103T000000.000Z/report.html") {
		t.Error("the healthy runs are missing from the index")
	}
	for _, dir := range []string{resultsFIFO, configFIFO, historyFIFO, zero} {
		err := within(t, "the report of "+dir, func() error { return RenderRun(dir) })
		if err == nil {
			t.Errorf("%s: the report rendered from a hostile file", dir)
		}
	}
}

// A shard holding a symlink out of its run directory is refused by the merge, not copied
// into the merged store where every reader would follow it.
func TestMergeRefusesSymlinkOut(t *testing.T) {
	a := shardStore(t, "etcd-a")
	logs := filepath.Join(a, "etcd-a", "20250201T000000.000Z", "logs")
	os.MkdirAll(logs, 0o755)
	if err := os.Symlink("/etc/passwd", filepath.Join(logs, "evil.log")); err != nil {
		t.Fatal(err)
	}
	_, err := MergeStores(filepath.Join(t.TempDir(), "merged"), []string{a})
	if err == nil || !strings.Contains(err.Error(), "symlink out of its run directory") {
		t.Fatalf("merge of a shard with logs/evil.log -> /etc/passwd: %v", err)
	}
}
