package images

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/internal/images/rootfs"
)

// Where binaries for images come from.
const (
	EnvBinary   = "SPLITBRAIN_BINARY"    // path of a static splitbrain binary for the candidate image
	EnvCacheDir = "SPLITBRAIN_CACHE_DIR" // where built binaries are kept (default: user cache dir/splitbrain)
	// EnvSalt goes into the base and candidate tags: a new value rebuilds every image from
	// debootstrap on under new tags (fresh packages, or measuring a cold build) without
	// touching images in use.
	EnvSalt = rootfs.EnvSalt

	modulePath      = "github.com/splitbrain-chaos/splitbrain"
	mainPackage     = modulePath + "/cmd/splitbrain"
	etcdModuleDir   = "internal/images/etcd-server"
	consulModuleDir = "internal/images/consul-server"
	kubeModuleDir   = "internal/images/kube-server"
	maxBinaryBytes  = 512 << 20
)

// cacheDir returns (and creates) the directory for built binaries and the build lock.
func cacheDir() (string, error) {
	dir := os.Getenv(EnvCacheDir)
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory (%v): set %s", err, EnvCacheDir)
		}
		dir = filepath.Join(base, "splitbrain")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cache directory %s: %w (set %s to a writable directory)", dir, err, EnvCacheDir)
	}
	return dir, nil
}

// isStaticSplitbrain tells whether path is a statically linked build of cmd/splitbrain: only
// such a binary runs in a FROM scratch image.
func isStaticSplitbrain(path string) bool {
	bi, err := buildinfo.ReadFile(path)
	if err != nil || bi.Path != mainPackage {
		return false
	}
	return isStaticELF(path)
}

// isStaticELF reports an ELF executable without a program interpreter (no dynamic loader).
func isStaticELF(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// candidateBinary finds the splitbrain binary for the candidate image: SPLITBRAIN_BINARY,
// else the running executable when it is a static splitbrain build, else a fresh
// CGO_ENABLED=0 build of ./cmd/splitbrain in the cache directory.
func candidateBinary(ctx context.Context, log io.Writer) (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if !isStaticELF(p) {
			return "", fmt.Errorf("%s=%s is not a static ELF executable: build it with CGO_ENABLED=0 go build ./cmd/splitbrain", EnvBinary, p)
		}
		return p, nil
	}
	if exe, err := os.Executable(); err == nil && isStaticSplitbrain(exe) {
		return exe, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("need a static splitbrain binary for the candidate image: %w; or set %s", err, EnvBinary)
	}
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "splitbrain-static")
	fmt.Fprintf(log, "images: go build ./cmd/splitbrain (static) -> %s\n", out)
	if err := goBuild(ctx, root, out, "./cmd/splitbrain", nil, ""); err != nil {
		return "", err
	}
	return out, nil
}

// SplitbrainBinDir returns a host directory holding only a static splitbrain binary named
// "splitbrain" (the one the candidate image gets), for a run to mount into candidates that
// do not run in the candidate image. It is a hard link (or a copy) under the cache directory,
// keyed by the binary's size and modification time, made once per build.
func SplitbrainBinDir(ctx context.Context, log io.Writer) (string, error) {
	src, err := candidateBinary(ctx, log)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(src)
	if err != nil {
		return "", err
	}
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "bin", fmt.Sprintf("%d-%d", fi.Size(), fi.ModTime().UnixNano()))
	dst := filepath.Join(dir, "splitbrain")
	if got, err := os.Stat(dst); err == nil && got.Size() == fi.Size() {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", dst, os.Getpid())
	defer os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil { // another file system: copy
		data, err := readBinary(src)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(tmp, data, 0o755); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", err
	}
	return dir, nil
}

// buildAndRead runs a binary-producing function and reads its output under a lock, so a
// concurrent splitbrain process rebuilding the same cached file cannot hand us a torn copy.
func buildAndRead(ctx context.Context, lockName string, produce func() (string, error)) ([]byte, error) {
	unlock, err := lockTag(ctx, lockName)
	if err != nil {
		return nil, err
	}
	defer unlock()
	path, err := produce()
	if err != nil {
		return nil, err
	}
	return readBinary(path)
}

// serverModule is a store server built on the host from its own Go module in the source tree
// (so the server's dependencies never enter the harness module) and cached by version.
type serverModule struct {
	name, version string
	dir           string   // module directory under the source root
	pkg           string   // package to build, from dir
	env           []string // extra build environment
	ldflags       string   // added to the stripping flags (version stamps)
}

// etcdServer is etcd's server. -mod=mod: the module's go.sum may still be completed from the
// module proxy.
var etcdServer = serverModule{name: "etcd", version: EtcdVersion, dir: etcdModuleDir, pkg: ".",
	env: []string{"GOFLAGS=-mod=mod"}}

// consulServer is Consul's server; its main package is the module root (the wrapper module
// requires it as a tool). It built at -p=1 once (a cold build peaks near 1.7 GB); builds
// beside rows run at nice 19 instead, and a Consul built last, alone, at -p=1 leaves a core
// idle. The caller's GOFLAGS (e.g. -p=1 on a small machine) still apply.
func consulServer() serverModule {
	return serverModule{name: "consul", version: ConsulVersion, dir: consulModuleDir,
		pkg: "github.com/hashicorp/consul", env: []string{withCallerGOFLAGS("-mod=mod")}}
}

// withCallerGOFLAGS is the GOFLAGS setting of a server build: flags, then the caller's.
func withCallerGOFLAGS(flags string) string {
	if g := os.Getenv("GOFLAGS"); g != "" {
		flags += " " + g
	}
	return "GOFLAGS=" + flags
}

// kubeServer is one Kubernetes server command (kube-apiserver, kube-controller-manager) of
// the kube-server module, stamped with KubernetesVersion the way Kubernetes' own build does
// (the API server reports it and derives its emulated version from it). The first build
// takes minutes (docs/performance.md); the caller's GOFLAGS (e.g. -p=1 on a shared machine:
// a job peaks near 2 GB) still apply.
func kubeServer(cmdName string) serverModule {
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubernetesVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	const v = "k8s.io/component-base/version."
	return serverModule{name: cmdName, version: KubernetesVersion, dir: kubeModuleDir,
		pkg: "k8s.io/kubernetes/cmd/" + cmdName, env: []string{withCallerGOFLAGS("-mod=mod")},
		ldflags: "-X " + v + "gitVersion=" + KubernetesVersion + " -X " + v + "gitMajor=" + major +
			" -X " + v + "gitMinor=" + minor + " -X " + v + "gitTreeState=clean"}
}

// kubeBinary builds (or finds cached) one Kubernetes server command.
func kubeBinary(ctx context.Context, log io.Writer, cmdName string) (string, error) {
	return kubeServer(cmdName).binary(ctx, log)
}

// binary builds the server into the cache directory, or finds it built there from the same
// inputs (its build stamp, buildstamp.go) without running go build.
func (m serverModule) binary(ctx context.Context, log io.Writer) (string, error) {
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, m.name+"-"+m.version)
	root, err := moduleRoot()
	if err != nil {
		// An installed splitbrain run outside the source tree still finds the server
		// built earlier (same version, so the image tag stays the same).
		if isStaticELF(out) {
			fmt.Fprintf(log, "images: no source tree here; using the cached %s %s build %s\n", m.name, m.version, out)
			return out, nil
		}
		return "", fmt.Errorf("need the %s module source to build %s (no cached build at %s either): %w", m.dir, m.name, out, err)
	}
	modDir := filepath.Join(root, m.dir)
	env := buildEnv(m.env)
	key, keyErr := m.buildKey(ctx, modDir, env)
	if keyErr == nil && stamped(out, key) {
		fmt.Fprintf(log, "images: %s %s: built from these inputs already (%s)\n", m.name, m.version, out+stampSuffix)
		return out, nil
	}
	fmt.Fprintf(log, "images: go build %s %s (static) -> %s\n", m.name, m.version, out)
	if err := goBuild(ctx, modDir, out, m.pkg, m.env, m.ldflags); err != nil {
		return "", err
	}
	// The key again: with -mod=mod the build may have completed the module's go.sum.
	if key, keyErr = m.buildKey(ctx, modDir, env); keyErr == nil {
		keyErr = writeStamp(out, key)
	}
	if keyErr != nil {
		fmt.Fprintf(log, "images: %s %s: no build stamp, the next process checks with go build again: %v\n", m.name, m.version, keyErr)
	}
	return out, nil
}

// buildEnv is the environment goBuild runs go build in.
func buildEnv(extra []string) []string {
	return append(append(os.Environ(), "CGO_ENABLED=0"), extra...)
}

// goBuild runs a static, trimmed go build without VCS stamps, so the bytes (and the image
// tag) depend only on the source, not on the work tree's dirty flag. ldflags are added to
// the stripping flags.
func goBuild(ctx context.Context, dir, out, pkg string, env []string, ldflags string) error {
	flags := "-s -w"
	if ldflags != "" {
		flags += " " + ldflags
	}
	cmd := hostCommand(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags="+flags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = buildEnv(env)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := RunGo(cmd); err != nil {
		return &BuildError{Step: fmt.Sprintf("go build %s (in %s)", pkg, dir), Log: tailLines(buf.String(), tailSize), Err: err}
	}
	return nil
}

// moduleRoot finds the splitbrain source tree: `go env GOMOD` from the working directory,
// else the directories above it, checking the module path.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isSplitbrainModule(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if out, err := exec.Command("go", "env", "GOMOD").Output(); err == nil {
		gomod := strings.TrimSpace(string(out))
		if isSplitbrainModule(gomod) {
			return filepath.Dir(gomod), nil
		}
	}
	return "", fmt.Errorf("the splitbrain source tree (go.mod of %s) is not in or above %s: run from the source tree", modulePath, wd)
}

func isSplitbrainModule(gomod string) bool {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && f[1] == modulePath {
			return true
		}
	}
	return false
}

// readBinary loads a binary for a build context.
func readBinary(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readAllLimited(f, maxBinaryBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}
