package images

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// Debian release and variant of the base image.
const (
	baseSuite   = "bookworm"
	baseVariant = "minbase"
)

// Files written into the base rootfs before import.
var baseFiles = []struct {
	path string
	mode os.FileMode
	data string
}{
	// Package postinst scripts must not try to start services inside a build.
	{"usr/sbin/policy-rc.d", 0o755, "#!/bin/sh\n# splitbrain images: never start services during package installs\nexit 101\n"},
	// Keep role images small: only what is asked for.
	{"etc/apt/apt.conf.d/90splitbrain", 0o644, "APT::Install-Recommends \"false\";\nAPT::Install-Suggests \"false\";\nAcquire::Retries \"3\";\n"},
}

// baseImportChanges are the Dockerfile instructions applied at import.
var baseImportChanges = []string{
	"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"ENV DEBIAN_FRONTEND=noninteractive",
	"LABEL " + LabelProject + "=" + ProjectName + " " + LabelRole + "=" + string(RoleBase),
	`CMD ["/bin/bash"]`,
}

// baseRef is the base tag: a hash of how it is made (suite, variant, files, import changes).
// The mirror is left out: any mirror gives the same packages.
func baseRef() string {
	h := sha256.New()
	fmt.Fprintf(h, "splitbrain-base-v1\n%s\n%s\n%s\n", baseSuite, baseVariant, os.Getenv(EnvSalt))
	for _, f := range baseFiles {
		fmt.Fprintf(h, "%s %o %d\n%s", f.path, f.mode, len(f.data), f.data)
	}
	for _, c := range baseImportChanges {
		fmt.Fprintf(h, "%s\n", c)
	}
	return localRef(RoleBase, baseSuite+"-"+hex.EncodeToString(h.Sum(nil))[:hashLen])
}

// ensureBase makes the debootstrapped base image present.
func (b *builder) ensureBase(ctx context.Context) (Result, error) {
	return b.ensureTag(ctx, RoleBase, baseRef(), "docker import", time.Now(), func(ref string) error {
		return b.buildBase(ctx, ref)
	})
}

// buildBase runs debootstrap into a temporary directory, cleans the tree and imports it.
func (b *builder) buildBase(ctx context.Context, ref string) error {
	if os.Geteuid() != 0 {
		return &BuildError{Role: RoleBase, Step: "debootstrap", Err: errors.New("building the base image needs root (debootstrap creates device nodes and chowns files): run as root, e.g. sudo splitbrain images build")}
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return &BuildError{Role: RoleBase, Step: "debootstrap", Err: errors.New("debootstrap is not installed: apt-get install debootstrap (make deps does it)")}
	}
	mirror, err := FindMirror()
	if err != nil {
		return &BuildError{Role: RoleBase, Step: "find mirror", Err: err}
	}
	dir, err := os.MkdirTemp("/var/tmp", "splitbrain-base-")
	if err != nil {
		return &BuildError{Role: RoleBase, Step: "debootstrap", Err: err}
	}
	defer os.RemoveAll(dir)
	b.logf("images: building %s: debootstrap --variant=%s %s from %s", ref, baseVariant, baseSuite, mirror)

	cmd := hostCommand(ctx, "debootstrap", "--variant="+baseVariant, baseSuite, dir, mirror)
	if err := b.runLogged(cmd, RoleBase, "debootstrap"); err != nil {
		return err
	}
	if err := cleanRootfs(dir); err != nil {
		return &BuildError{Role: RoleBase, Step: "clean rootfs", Err: err}
	}
	return b.importRootfs(ctx, dir, ref)
}

// runLogged runs a command, streaming its output to the log and keeping its tail for errors.
func (b *builder) runLogged(cmd *exec.Cmd, role Role, step string) error {
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	tail := &ring{max: tailSize}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			tail.add(sc.Text())
			b.logf("[%s] %s", role, sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		return &BuildError{Role: role, Step: step, Log: tail.lines, Err: err}
	}
	return nil
}

// cleanRootfs drops apt lists, caches and downloaded packages and writes baseFiles.
func cleanRootfs(dir string) error {
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
	for _, f := range baseFiles {
		p := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(f.data), f.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// importRootfs streams `tar -C dir .` into the engine's image import. GNU tar keeps
// device nodes, hard links, owners and xattrs exactly as debootstrap made them.
func (b *builder) importRootfs(ctx context.Context, dir, ref string) error {
	tarCmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "--xattrs", "-C", dir, "-c", ".")
	stdout, err := tarCmd.StdoutPipe()
	if err != nil {
		return &BuildError{Role: RoleBase, Step: "tar rootfs", Err: err}
	}
	var stderr strings.Builder
	tarCmd.Stderr = &stderr
	if err := tarCmd.Start(); err != nil {
		return &BuildError{Role: RoleBase, Step: "tar rootfs", Err: err}
	}
	resp, err := b.cli.ImageImport(ctx, client.ImageImportSource{Source: stdout, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: baseImportChanges, Message: "splitbrain base: debootstrap --variant=" + baseVariant + " " + baseSuite})
	if err != nil {
		tarCmd.Process.Kill()
		tarCmd.Wait()
		return &BuildError{Role: RoleBase, Step: "docker import", Err: err}
	}
	defer resp.Close()
	dec := json.NewDecoder(resp)
	var importErr error
	for {
		var m jsonMessage
		if err := dec.Decode(&m); err != nil {
			if err != io.EOF {
				importErr = err
			}
			break
		}
		if m.Error != "" {
			importErr = errors.New(m.Error)
			break
		}
	}
	io.Copy(io.Discard, stdout)
	if err := tarCmd.Wait(); err != nil {
		return &BuildError{Role: RoleBase, Step: "tar rootfs", Log: tailLines(stderr.String(), tailSize), Err: err}
	}
	if importErr != nil {
		return &BuildError{Role: RoleBase, Step: "docker import", Err: importErr}
	}
	return nil
}
