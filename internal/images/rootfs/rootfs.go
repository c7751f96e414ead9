// Package rootfs makes the base image's root file system, Debian's minbase by debootstrap,
// and names the base image. It imports only the standard library, so the small program
// `make chaos` builds first (cmd/splitbrain-rootfs) compiles in seconds and runs debootstrap
// while the harness itself compiles: on a bare machine the two no longer wait for each
// other (issue 46). The image builder (internal/images) takes a tree prepared that way, or
// runs debootstrap itself when there is none.
package rootfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Debian release and variant of the base image.
const (
	Suite   = "bookworm"
	Variant = "minbase"
)

// The names the base image is known by; internal/images uses the same constants for every
// image it builds.
const (
	// Namespace prefixes every local tag. ".invalid" can never resolve (RFC 2606), so a
	// local image can never be pulled by accident.
	Namespace    = "splitbrain.invalid/"
	LabelProject = "io.splitbrain.project" // always ProjectName
	LabelRole    = "io.splitbrain.role"
	ProjectName  = "splitbrain"
	Role         = "base"
	// EnvSalt makes every image tag new (measuring a bare machine on a machine with images).
	EnvSalt = "SPLITBRAIN_IMAGE_SALT"
	hashLen = 12
)

// Files are written into the tree before import.
var Files = []struct {
	Path string
	Mode os.FileMode
	Data string
}{
	// Package postinst scripts must not try to start services inside a build.
	{"usr/sbin/policy-rc.d", 0o755, "#!/bin/sh\n# splitbrain images: never start services during package installs\nexit 101\n"},
	// Keep role images small: only what is asked for.
	{"etc/apt/apt.conf.d/90splitbrain", 0o644, "APT::Install-Recommends \"false\";\nAPT::Install-Suggests \"false\";\nAcquire::Retries \"3\";\n"},
}

// ImportChanges are the Dockerfile instructions applied at import.
var ImportChanges = []string{
	"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"ENV DEBIAN_FRONTEND=noninteractive",
	"LABEL " + LabelProject + "=" + ProjectName + " " + LabelRole + "=" + Role,
	`CMD ["/bin/bash"]`,
}

// Ref is the base image's tag: a hash of how it is made (suite, variant, salt, files,
// import changes). The mirror is left out: any mirror gives the same packages.
func Ref() string {
	h := sha256.New()
	fmt.Fprintf(h, "splitbrain-base-v1\n%s\n%s\n%s\n", Suite, Variant, os.Getenv(EnvSalt))
	hashFiles(h)
	for _, c := range ImportChanges {
		fmt.Fprintf(h, "%s\n", c)
	}
	return Namespace + Role + ":" + Suite + "-" + hex.EncodeToString(h.Sum(nil))[:hashLen]
}

func hashFiles(w io.Writer) {
	for _, f := range Files {
		fmt.Fprintf(w, "%s %o %d\n%s", f.Path, f.Mode, len(f.Data), f.Data)
	}
}

// Clean drops apt lists, caches and downloaded packages from a debootstrapped tree and
// writes Files.
func Clean(dir string) error {
	for _, pattern := range []string{"var/lib/apt/lists/*", "var/cache/apt/*.bin", "var/cache/apt/archives/*.deb", "var/log/*.log", "var/log/apt/*"} {
		matches, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return err
		}
		for _, m := range matches {
			if filepath.Base(m) == "partial" || filepath.Base(m) == "lock" {
				continue
			}
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
	}
	for _, f := range Files {
		p := filepath.Join(dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(f.Data), f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.Mode); err != nil {
			return err
		}
	}
	return nil
}

// RemoveTree removes a debootstrapped tree. A debootstrap killed mid-way leaves /proc (and
// maybe /sys) mounted inside it, and a plain recursive removal would walk into them, so
// whatever is mounted below dir is unmounted first, deepest first; when an unmount fails
// nothing is removed.
func RemoveTree(dir string) error {
	mounts, err := mountsBelow(dir)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			return fmt.Errorf("unmounting %s (left mounted by a killed debootstrap): %w; the tree is kept", m, err)
		}
	}
	return os.RemoveAll(dir)
}

// mountsBelow lists the mount points under dir, deepest first.
func mountsBelow(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir) + "/"
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		// Field 5 is the mount point, with spaces and such octal-escaped (\040).
		if mp := unescapeMount(f[4]); strings.HasPrefix(mp, dir) {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// DebootstrapArgs are debootstrap's arguments that make a tree in dir from mirror.
func DebootstrapArgs(dir, mirror string) []string {
	return []string{"--variant=" + Variant, Suite, dir, mirror}
}

// WorkDir holds the prepared tree, its lock and the trees being made (on one file system,
// so a finished tree is renamed into place).
var WorkDir = "/var/tmp"

// key names a prepared tree: what goes into it (the salt too, so that a salted run, which
// measures a bare machine, does not take an unsalted run's tree).
func key() string {
	h := sha256.New()
	fmt.Fprintf(h, "splitbrain-rootfs-v1\n%s\n%s\n%s\n", Suite, Variant, os.Getenv(EnvSalt))
	hashFiles(h)
	return hex.EncodeToString(h.Sum(nil))[:hashLen]
}

const prefix = "splitbrain-rootfs-"

func preparedPath() string { return filepath.Join(WorkDir, prefix+key()) }

// Lock takes the lock every maker and taker of the tree holds, waiting for it (a tree being
// prepared is waited for, not made twice) until ctx ends. The lock goes with the process,
// so a killed holder leaves none behind.
func Lock(ctx context.Context) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(WorkDir, "splitbrain-rootfs.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, context.Cause(ctx)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Take hands over the prepared tree, if there is one, under a new name the caller removes
// when done with it. The caller holds the lock.
func Take() (dir string, ok bool) {
	p := preparedPath()
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		return "", false
	}
	dir = fmt.Sprintf("%s.taken-%d", p, os.Getpid())
	if err := os.Rename(p, dir); err != nil {
		return "", false
	}
	return dir, true
}

// Prepared says a prepared tree is there.
func Prepared() bool {
	fi, err := os.Stat(preparedPath())
	return err == nil && fi.IsDir()
}

// Prepare makes the tree (debootstrap from mirror, then Clean) and renames it into place
// once it is whole, logging debootstrap's output to log. The caller holds the lock. Trees of
// other keys and the remains of interrupted runs are removed first: the lock says nobody
// is making them.
func Prepare(ctx context.Context, mirror string, log io.Writer) error {
	old, _ := filepath.Glob(filepath.Join(WorkDir, prefix+"*"))
	for _, o := range old {
		if o != preparedPath() {
			RemoveTree(o)
		}
	}
	if Prepared() {
		return nil
	}
	tmp, err := os.MkdirTemp(WorkDir, prefix+"making-")
	if err != nil {
		return err
	}
	defer RemoveTree(tmp) // gone after the rename; the remains of a failure otherwise
	cmd := exec.CommandContext(ctx, "debootstrap", DebootstrapArgs(tmp, mirror)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("debootstrap --variant=%s %s from %s: %w", Variant, Suite, mirror, err)
	}
	if err := Clean(tmp); err != nil {
		return fmt.Errorf("cleaning the tree: %w", err)
	}
	return os.Rename(tmp, preparedPath())
}
