//go:build chaos

package nemesis

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
)

// How long it takes to change three candidates' clocks at once, the two ways: a Docker copy
// and an exec (rename) per candidate, as before, and a rename in each candidate's host
// directory bind-mounted read-only into its container, as the harness does now. Both must
// put the content where a reader in the container sees it; the figures are logged for
// docs/performance.md, not asserted (a loaded machine moves them).
func TestChaosClockWriteLatency(t *testing.T) {
	run := platformtest.NewRun(t, 5*time.Minute)
	ctx := run.Ctx
	imgs := platformtest.Images(t, ctx, images.RoleBase)
	const target = "/splitbrain-clock"
	var nodes []*platform.Node
	var hostFiles []string
	t.Cleanup(func() {
		for _, n := range nodes {
			if err := n.Terminate(ctx); err != nil {
				t.Errorf("terminate %s: %v", n.Name(), err)
			}
		}
	})
	for i := 1; i <= 3; i++ {
		dir := filepath.Join(t.TempDir(), "clock")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		hostFiles = append(hostFiles, filepath.Join(dir, "offset"))
		if err := os.WriteFile(hostFiles[len(hostFiles)-1], []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := run.Engine.Start(ctx, run.ID, run.Net, platform.NodeSpec{
			Name: fmt.Sprintf("c%d", i), Role: "candidate", Image: imgs[images.RoleBase], Init: true,
			Cmd:    []string{"sleep", "infinity"},
			Mounts: []platform.Mount{{HostDir: dir, Target: target}},
			// The copy path writes next to the mount, as it wrote /splitbrain-clock-offset.
			Files: []platform.File{{Path: "/copied/offset", Content: []byte("0\n"), Mode: 0o666}},
		})
		if n != nil {
			nodes = append(nodes, n)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	read := func(n *platform.Node, path string) string {
		code, out, err := n.Exec(ctx, []string{"cat", path})
		if err != nil || code != 0 {
			t.Fatalf("%s: cat %s: exit %d, %v", n.Name(), path, code, err)
		}
		return strings.TrimSpace(lastLine(out))
	}
	const rounds = 12
	measure := func(how string, write func(i int, content []byte) error, path string) []time.Duration {
		var took []time.Duration
		for r := 1; r <= rounds; r++ {
			content := []byte(fmt.Sprintf("%d 0.5 %d\n", r, time.Now().UnixNano()))
			t0 := time.Now()
			names := []string{"c1", "c2", "c3"}
			if err := eachParallel(names, how+" ", func(name string) error {
				return write(int(name[1]-'1'), content)
			}); err != nil {
				t.Fatal(err)
			}
			took = append(took, time.Since(t0))
			for _, n := range nodes {
				if got := read(n, path); got != strings.TrimSpace(string(content)) {
					t.Fatalf("%s: %s reads %q after the write, want %q", how, n.Name(), got, content)
				}
			}
		}
		slices.Sort(took)
		t.Logf("%-28s three candidates at once, %d rounds: median %v, max %v", how, rounds, took[rounds/2].Round(10*time.Microsecond), took[rounds-1].Round(10*time.Microsecond))
		return took
	}
	measure("docker copy + exec rename", func(i int, content []byte) error {
		return writeFileAtomic(ctx, dockerNode{nodes[i]}, "/copied/offset", content)
	}, "/copied/offset")
	measure("host rename, bind mount", func(i int, content []byte) error {
		return writeHostFileAtomic(hostFiles[i], content)
	}, target+"/offset")
	// Read-only inside: the candidate cannot change its own clock.
	if code, _, err := nodes[0].Exec(ctx, []string{"sh", "-c", "echo 1 > " + target + "/offset"}); err != nil || code == 0 {
		t.Errorf("a write to the mounted clock file inside the container succeeded (exit %d, %v): the mount must be read-only", code, err)
	}
}
