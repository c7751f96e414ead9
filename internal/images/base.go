package images

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/splitbrain-chaos/splitbrain/internal/images/rootfs"
)

// baseRef is the base tag (rootfs.Ref: a hash of how it is made).
func baseRef() string { return rootfs.Ref() }

// ensureBase makes the debootstrapped base image present.
func (b *builder) ensureBase(ctx context.Context) (Result, error) {
	return b.ensureTag(ctx, RoleBase, baseRef(), "docker import", time.Now(), func(ref string) error {
		return b.buildBase(ctx, ref)
	})
}

// buildBase imports the tree cmd/splitbrain-rootfs prepared beside the build (make chaos
// starts it before the harness compiles), or, when there is none, runs debootstrap into a
// temporary directory and cleans the tree, then imports it. It waits for a tree being
// prepared rather than making a second one.
func (b *builder) buildBase(ctx context.Context, ref string) error {
	if os.Geteuid() != 0 {
		return &BuildError{Role: RoleBase, Step: "debootstrap", Err: errors.New("building the base image needs root (debootstrap creates device nodes and chowns files): run as root, e.g. sudo splitbrain images build")}
	}
	unlock, err := rootfs.Lock(ctx)
	if err != nil {
		return &BuildError{Role: RoleBase, Step: "wait for the prepared tree", Err: err}
	}
	defer unlock()
	if dir, ok := rootfs.Take(); ok {
		defer rootfs.RemoveTree(dir)
		b.logf("images: building %s from the tree debootstrapped beside the build (cmd/splitbrain-rootfs)", ref)
		return b.importRootfs(ctx, dir, ref)
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return &BuildError{Role: RoleBase, Step: "debootstrap", Err: errors.New("debootstrap is not installed: apt-get install debootstrap (make deps does it)")}
	}
	mirror, err := rootfs.FindMirror()
	if err != nil {
		return &BuildError{Role: RoleBase, Step: "find mirror", Err: err}
	}
	// Every base build holds the lock, so a tree left here is the remains of a killed one.
	if old, _ := filepath.Glob(filepath.Join(rootfs.WorkDir, "splitbrain-base-*")); len(old) > 0 {
		for _, o := range old {
			if err := rootfs.RemoveTree(o); err != nil {
				b.logf("images: %v", err)
			}
		}
	}
	dir, err := os.MkdirTemp(rootfs.WorkDir, "splitbrain-base-")
	if err != nil {
		return &BuildError{Role: RoleBase, Step: "debootstrap", Err: err}
	}
	defer rootfs.RemoveTree(dir) // a debootstrap killed mid-way leaves /proc mounted in it
	b.logf("images: building %s: debootstrap --variant=%s %s from %s", ref, rootfs.Variant, rootfs.Suite, mirror)

	cmd := hostCommand(ctx, "debootstrap", rootfs.DebootstrapArgs(dir, mirror)...)
	if err := b.runLogged(cmd, RoleBase, "debootstrap"); err != nil {
		return err
	}
	if err := rootfs.Clean(dir); err != nil {
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
		client.ImageImportOptions{Changes: rootfs.ImportChanges, Message: "splitbrain base: debootstrap --variant=" + rootfs.Variant + " " + rootfs.Suite})
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
