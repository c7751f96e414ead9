package images

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestNPMInstallOnceForConcurrentBuilds: two builds of one library image at once (two rows
// of the same library) run npm ci once, and each gets a whole node_modules tree. Before the
// install took a lock both ran it, and the later one's replace of the directory removed
// files under the earlier one's read (a bare machine's make chaos, node-etcd3).
func TestNPMInstallOnceForConcurrentBuilds(t *testing.T) {
	bin, cache := t.TempDir(), t.TempDir()
	runs := filepath.Join(t.TempDir(), "runs")
	// A stand-in for npm ci: slow enough that both callers are inside it at once without
	// the lock; it counts its runs and writes a small tree.
	script := "#!/bin/sh\necho run >> " + runs + "\nsleep 0.5\n" +
		"mkdir -p node_modules/a/lib node_modules/b\n" +
		"echo x > node_modules/a/lib/index.js\necho y > node_modules/b/package.json\n"
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(EnvCacheDir, cache)

	const builds = 3
	var wg sync.WaitGroup
	trees := make([][]contextFile, builds)
	errs := make([]error, builds)
	for i := range builds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir, err := npmModules(context.Background(), t.Logf, "lib-test", []byte(`{"name":"t"}`), []byte(`{"lockfileVersion":3}`))
			if err != nil {
				errs[i] = err
				return
			}
			trees[i], errs[i] = moduleTree(dir, "lib")
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		if len(trees[i]) != 6 { // node_modules, a, a/lib, a/lib/index.js, b, b/package.json
			var names []string
			for _, f := range trees[i] {
				names = append(names, f.name)
			}
			t.Errorf("build %d read %d entries: %s", i, len(trees[i]), strings.Join(names, " "))
		}
	}
	data, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "run"); n != 1 {
		t.Errorf("npm ci ran %d times for %d concurrent builds of one lockfile, want once", n, builds)
	}
}
