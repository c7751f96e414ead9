//go:build chaos

package harness

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
)

// A teardown right after the workload's SIGTERM (a handoff whose faults phase ended as it was
// sent) lets the candidate exit on that one: a second SIGTERM took the default action of a
// Go candidate that is PID 1 in its container (exit 2), and the lint blamed the candidate
// (R11 sigterm-exit-code; CI of 5db1f5b, TestCandidateCheckTimeoutProvesNothing). The
// stand-in resigns for 1 s on SIGTERM and exits 0, or 3 if a second one reaches it.
func TestTeardownDoesNotSignalTwice(t *testing.T) {
	run := platformtest.NewRun(t, 3*time.Minute)
	ctx := run.Ctx
	t.Cleanup(func() {
		if _, err := run.Engine.Sweep(context.Background(), platform.SweepFilter{RunID: run.ID}); err != nil {
			t.Errorf("sweep: %v", err)
		}
	})
	img := platformtest.Images(t, ctx, images.RoleTools)[images.RoleTools]
	path := filepath.Join(t.TempDir(), HistoryFile)
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	log := newJournalOn(w)
	watch := newWatch(run.ID, log)
	c := newCandidateProcs(run.ID, ctx, log, watch)
	watch.candidateDied = c.died
	if err := watch.start(ctx, run.Engine); err != nil {
		t.Fatal(err)
	}
	defer watch.stop()
	script := `trap 'trap "exit 3" TERM; echo resigning; sleep 1; exit 0' TERM; echo ready; while :; do sleep 0.05; done`
	ready := make(chan struct{})
	var once sync.Once
	err = c.start(ctx, run.Engine, run.Net, nil, []string{"c1"}, func(name string) (platform.NodeSpec, error) {
		return platform.NodeSpec{Name: name, Role: "candidate", Image: img, Cmd: []string{"sh", "-c", script}, LogDir: t.TempDir(),
			OnStdout: func(line []byte) {
				if string(line) == "ready" {
					once.Do(func() { close(ready) })
				}
			}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, n := range c.containers() {
			n.Terminate(context.Background())
		}
	}()
	select { // the shell prints ready once its trap is set
	case <-ready:
	case <-ctx.Done():
		t.Fatal("the stand-in never printed ready")
	}
	if err := c.signal(ctx, "c1", "SIGTERM", "handoff"); err != nil {
		t.Fatal(err)
	}
	c.stop(ctx, nil) // the teardown, while c1 resigns
	w.Close()
	evs, _, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sigterms []string
	var exit *int
	for _, e := range evs {
		switch {
		case e.Kind == history.KindSignal && e.Signal == "SIGTERM":
			sigterms = append(sigterms, e.Reason)
		case e.Kind == history.KindProcessExit && e.Node == "c1":
			exit = e.Exit
		}
	}
	if len(sigterms) != 1 {
		t.Errorf("SIGTERMs recorded: %q, want only the handoff's", sigterms)
	}
	switch {
	case exit == nil:
		t.Error("c1's exit has no code")
	case *exit != 0:
		t.Errorf("c1's exit code %d, want 0 (3: a second SIGTERM reached it)", *exit)
	}
}
