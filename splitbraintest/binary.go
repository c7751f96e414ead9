package splitbraintest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/assess/assessproto"
	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

const (
	modulePath  = "github.com/splitbrain-chaos/splitbrain"
	mainPackage = modulePath + "/cmd/splitbrain"
	envBinary   = assessproto.EnvBinary
	envProfile  = assessproto.EnvProfile
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// splitbrainBinary is the splitbrain executable the checks run in (`splitbrain assess
// --driven`): $SPLITBRAIN_BINARY when set, else a static build of cmd/splitbrain from the
// splitbrain module the test's module requires (a clone, through a replace, or the module
// cache), once per process. The build runs in that module's own directory, with its own
// go.sum: a user's module needs no requirement on the stores' client libraries, which only
// the binary links. Being static, the binary is also the one the candidate image holds.
func splitbrainBinary(logf func(format string, args ...any)) (string, error) {
	binaryOnce.Do(func() {
		if p := os.Getenv(envBinary); p != "" {
			if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				binaryErr = fmt.Errorf("%s=%s is not an executable file (%v): point it at a static splitbrain build (CGO_ENABLED=0 go build ./cmd/splitbrain), or unset it", envBinary, p, err)
				return
			}
			binaryPath = p
			return
		}
		binaryPath, binaryErr = buildSplitbrain(logf)
	})
	return binaryPath, binaryErr
}

func buildSplitbrain(logf func(format string, args ...any)) (string, error) {
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", modulePath)
	var stderr bytes.Buffer
	list.Stderr = &stderr
	out, err := list.Output()
	src := strings.TrimSpace(string(out))
	if err != nil || src == "" {
		return "", fmt.Errorf("go list -m %s (to build the splitbrain binary the checks run in): %v\n%s\nRun go mod download %s in your module, or set %s to a static splitbrain build",
			modulePath, err, strings.TrimSpace(stderr.String()), modulePath, envBinary)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the splitbrain binary (%v): set %s to a static splitbrain build", err, envBinary)
	}
	dir := filepath.Join(base, "splitbrain")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	final := filepath.Join(dir, "splitbraintest-splitbrain")
	// A fresh name, renamed into place: another test process may be running the last one.
	// It starts as a copy of the last build: go build finds its build ID up to date and
	// skips the link (3 s instead of 20 s at load 15 on 2 cores, for every go test process).
	tmp, err := os.CreateTemp(dir, "splitbraintest-splitbrain-*")
	if err != nil {
		return "", err
	}
	if last, err := os.Open(final); err == nil {
		if fi, err := last.Stat(); err == nil && fi.Mode().IsRegular() {
			io.Copy(tmp, last)
		}
		last.Close()
	}
	tmp.Close()
	if err := os.Chmod(tmp.Name(), 0o755); err != nil { // CreateTemp's 0600, kept when no link runs
		os.Remove(tmp.Name())
		return "", err
	}
	if logf != nil {
		logf("splitbraintest: building the splitbrain binary from %s (go build ./cmd/splitbrain, static; minutes the first time, cached after)", src)
	}
	// No -trimpath: the compiled packages are then the ones `make build` (CGO_ENABLED=0) put
	// in the build cache, so in a clone this is a link, not a compile.
	cmd := exec.Command("go", "build", "-buildvcs=false", "-ldflags=-s -w", "-o", tmp.Name(), "./cmd/splitbrain")
	cmd.Dir = src
	// splitbrain's own go.mod and go.sum decide the versions, whatever the user's GOFLAGS
	// (-mod=vendor would look for a vendor directory there) or go.work say.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOWORK=off")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("go build ./cmd/splitbrain in %s (the splitbrain binary the checks run in): %v\n%s\nOr set %s to a static splitbrain build",
			src, err, strings.TrimSpace(buf.String()), envBinary)
	}
	if err := installBinary(tmp.Name(), final); err != nil {
		return "", err
	}
	return final, nil
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
