// Command splitbrain-rootfs debootstraps the base image's tree ahead of the harness's first
// image build. `make chaos` builds it first (the standard library only: seconds) and starts
// it in the background, so that on a bare machine debootstrap's downloads and unpacking run
// while the harness compiles; the image builder then imports the tree instead of making one
// (internal/images/rootfs). It does nothing when the base image or a prepared tree is there,
// and leaves every error to the image builder, which reports it: this is only a head start.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/images/rootfs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx))
}

func run(ctx context.Context) int {
	say := func(format string, a ...any) {
		fmt.Printf("%s splitbrain-rootfs: %s\n", time.Now().UTC().Format(time.TimeOnly), fmt.Sprintf(format, a...))
	}
	ref := rootfs.Ref()
	if exec.CommandContext(ctx, "docker", "image", "inspect", ref).Run() == nil {
		say("%s is there: nothing to prepare", ref)
		return 0
	}
	switch _, err := exec.LookPath("debootstrap"); {
	case os.Geteuid() != 0:
		say("not root: the image builder debootstraps (and says what it needs)")
		return 0
	case err != nil:
		say("no debootstrap: the image builder will say what to install")
		return 0
	}
	mirror, err := rootfs.FindMirror()
	if err != nil {
		say("%v", err)
		return 0
	}
	unlock, err := rootfs.Lock(ctx)
	if err != nil {
		say("%v", err)
		return 1
	}
	defer unlock()
	if rootfs.Prepared() {
		say("a prepared tree is there")
		return 0
	}
	t0 := time.Now()
	say("debootstrap --variant=%s %s from %s, for %s", rootfs.Variant, rootfs.Suite, mirror, ref)
	if err := rootfs.Prepare(ctx, mirror, os.Stdout); err != nil {
		say("%v", err)
		return 1
	}
	say("tree prepared in %v", time.Since(t0).Round(100*time.Millisecond))
	return 0
}
