package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// A server binary's build stamp (<binary>.inputs) records what the binary was built from, so
// a process that finds the same inputs skips go build. go build's own up-to-date check loads
// the server's whole module graph: 1.6 CPU-s for kube-apiserver, 1.4 for Consul, 0.5 for etcd,
// in every process that ensures the image (the go command's CPU in a make test fell from 109
// to 30 CPU-s with the stamps; docs/performance.md).
// The inputs are the wrapper module's files (its go.mod and go.sum pin every dependency, and
// the go command checks module-cache copies against go.sum), the toolchain and its
// environment, and the build's flags; the stamp also holds the binary's size and
// modification time, so a binary replaced or touched since is rebuilt.
const stampSuffix = ".inputs"

// buildKey hashes a server module's build inputs as go build in dir with env would see them:
// the module's own settings, what go env reports of the toolchain and the variables that
// change the output (the rest of env, which differs between processes, is left out), and
// every file of the module.
func (m serverModule) buildKey(ctx context.Context, dir string, env []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "pkg %s\nldflags %s\nenv %q\n", m.pkg, m.ldflags, m.env)
	goEnv := exec.CommandContext(ctx, "go", "env", "GOVERSION", "GOOS", "GOARCH", "GOAMD64", "GOARM64", "GOEXPERIMENT", "GOFLAGS", "GOTOOLCHAIN", "CGO_ENABLED")
	goEnv.Dir, goEnv.Env = dir, env
	out, err := goEnv.Output()
	if err != nil {
		return "", fmt.Errorf("go env in %s: %w", dir, err)
	}
	fmt.Fprintf(h, "go env\n%s", out)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "file %s %d\n", rel, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// stampLine is what the stamp of binary out built from key holds.
func stampLine(out, key string) (string, bool) {
	fi, err := os.Stat(out)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	return fmt.Sprintf("%s %d %d\n", key, fi.Size(), fi.ModTime().UnixNano()), true
}

// stamped tells whether out is a static binary built from key and untouched since.
func stamped(out, key string) bool {
	want, ok := stampLine(out, key)
	if !ok || !isStaticELF(out) {
		return false
	}
	got, err := os.ReadFile(out + stampSuffix)
	return err == nil && string(got) == want
}

// writeStamp records that out was built from key. A stamp that cannot be written only costs
// the next process a go build check, so its error is returned for the log, not the build.
func writeStamp(out, key string) error {
	line, ok := stampLine(out, key)
	if !ok {
		return fmt.Errorf("%s: no binary to stamp", out)
	}
	tmp := fmt.Sprintf("%s%s.%d.tmp", out, stampSuffix, os.Getpid())
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out+stampSuffix)
}
