package splitbraintest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
)

const (
	modulePath  = "github.com/splitbrain-chaos/splitbrain"
	mainPackage = modulePath + "/cmd/splitbrain"
)

var (
	binaryOnce sync.Once
	binaryErr  error
)

// ensureSplitbrainBinary provides the static splitbrain binary the candidate image holds
// when neither SPLITBRAIN_BINARY nor a splitbrain source tree in or above the working
// directory does (the images package builds it from the tree then): a user's module outside
// a clone builds cmd/splitbrain at the version it requires, once per process.
func ensureSplitbrainBinary() error {
	binaryOnce.Do(func() {
		if os.Getenv(images.EnvBinary) != "" || inSourceTree() {
			return
		}
		binaryErr = buildSplitbrain()
	})
	return binaryErr
}

func buildSplitbrain() error {
	base, err := os.UserCacheDir()
	if err != nil {
		return fmt.Errorf("no cache directory for the splitbrain binary (%v): set %s to a static splitbrain build", err, images.EnvBinary)
	}
	dir := filepath.Join(base, "splitbrain")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A fresh name, renamed into place: another test process may be reading the last one.
	tmp, err := os.CreateTemp(dir, "splitbraintest-splitbrain-*")
	if err != nil {
		return err
	}
	tmp.Close()
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", tmp.Name(), mainPackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("go build %s (static, for the candidate image): %v\n%s\nIf go.sum lacks its modules, run `go get %s` in your module; or set %s to a static splitbrain build",
			mainPackage, err, strings.TrimSpace(out.String()), mainPackage, images.EnvBinary)
	}
	final := filepath.Join(dir, "splitbraintest-splitbrain")
	if err := installBinary(tmp.Name(), final); err != nil {
		return err
	}
	return os.Setenv(images.EnvBinary, final)
}

// installBinary renames the built binary tmp to final, unless final is there and is not a
// regular file (a symlink, a FIFO): the rename would replace that, not the last build.
func installBinary(tmp, final string) error {
	if err := runfile.CheckReplaceable(final); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, final)
}

// inSourceTree tells whether a splitbrain source tree (its go.mod) is in or above the
// working directory: the images package builds its binaries from it.
func inSourceTree() bool {
	wd, err := os.Getwd()
	if err != nil {
		return false
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && f[1] == modulePath {
					return true
				}
			}
		}
		if filepath.Dir(d) == d {
			return false
		}
	}
}
