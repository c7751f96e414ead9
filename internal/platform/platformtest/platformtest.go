// Package platformtest is the Docker setup shared by the chaos tests (build tag chaos) of
// every package: connect to the engine, make a run network, ensure local images, and at the
// end assert that the run left nothing behind. Only tests import it.
package platformtest

import (
	"context"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// Run is one test's Docker scope: everything it creates carries ID.
type Run struct {
	Ctx    context.Context // ends after the timeout given to NewRun, or when the test ends
	Engine *platform.Engine
	ID     string
	Net    *platform.Network
}

// Connect returns an engine that is closed when the test ends. Chaos tests need a real
// engine, so its absence fails the test (our machines have one) with how to get it.
func Connect(t testing.TB, ctx context.Context) *platform.Engine {
	t.Helper()
	eng, err := platform.Connect(ctx)
	if err != nil {
		t.Fatalf("docker engine needed for chaos tests (start one with scripts/ensure-docker.sh): %v", err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// NewRun connects and makes a network under a fresh run id. Its cleanup is registered first,
// so it runs after the test's own cleanups (which stop what they started): it removes the
// network, then fails the test if anything of the run is left, sweeping it so that nothing
// stays behind for other tests.
func NewRun(t testing.TB, timeout time.Duration) *Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	r := &Run{Ctx: ctx, Engine: Connect(t, ctx), ID: platform.NewRunID()}
	net, err := r.Engine.NewNetwork(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	r.Net = net
	t.Cleanup(func() {
		if err := net.Remove(context.Background()); err != nil {
			t.Errorf("remove network: %v", err)
		}
		AssertNoLeftovers(t, r.Engine, r.ID)
	})
	return r
}

// AssertNoLeftovers fails the test when containers or networks of runID remain, and sweeps
// them.
func AssertNoLeftovers(t testing.TB, eng *platform.Engine, runID string) {
	t.Helper()
	left, err := eng.Leftovers(context.Background(), runID)
	if err != nil || !left.Empty() {
		t.Errorf("run %s left %s (%v)", runID, left, err)
		eng.Sweep(context.Background(), platform.SweepFilter{RunID: runID})
	}
}

// Images makes the local-profile images of roles present (building what is missing).
func Images(t testing.TB, ctx context.Context, roles ...images.Role) images.Set {
	t.Helper()
	set, err := images.Ensure(ctx, images.ProfileLocal, roles...)
	if err != nil {
		t.Fatalf("images %v: %v", roles, err)
	}
	return set
}

// LaunchStore starts a store cluster on the run's network; the cluster is closed when the
// test ends (before the run's leftover check). A launch error fails the test.
func (r *Run) LaunchStore(t testing.TB, opts stores.Options) stores.Cluster {
	t.Helper()
	cl, err := stores.Launch(r.Ctx, r.Engine, r.Net, r.ID, opts)
	if err != nil {
		t.Fatal(err) // what a failed launch left is swept by the run's cleanup
	}
	t.Cleanup(func() {
		if err := cl.Close(context.Background()); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return cl
}
