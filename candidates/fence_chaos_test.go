//go:build chaos

package candidates_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/fence"
)

// hostPower is the fence device's power switch over the group's host processes: off is a
// SIGKILL of the node's process, confirmed when its Wait returned. Power-on is left to the
// test, which restarts nodes itself (a second start would run the node twice).
type hostPower struct{ g *group }

func (h hostPower) Off(ctx context.Context, node, by string, id int) error {
	h.g.mu.Lock()
	p := h.g.procs[node]
	h.g.mu.Unlock()
	if p == nil {
		return fence.ErrNoNode
	}
	select {
	case <-p.done:
		return nil // already down
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return errors.New(node + " still running 10s after SIGKILL")
	}
}

func (h hostPower) On(context.Context, string) error {
	return errors.New("power on is not offered here: the recipe test restarts nodes itself")
}

func (h hostPower) PoweredOn(_ context.Context, node string) (bool, error) {
	h.g.mu.Lock()
	p := h.g.procs[node]
	h.g.mu.Unlock()
	if p == nil {
		return false, nil
	}
	select {
	case <-p.done:
		return false, nil
	default:
		return true, nil
	}
}

// Requester: every host process sends from loopback, so none can be told apart; the
// device serves them all (the harness's device tells containers apart by address).
func (h hostPower) Requester(_ context.Context, a netip.Addr) (string, bool) {
	return "", a.IsLoopback()
}

// startHostFence serves a fence device for c1..c3 on loopback for the group's processes
// and returns its URL (SPLITBRAIN_FENCE_URL); recipes that fence (etcd-stonith) need it.
func startHostFence(t *testing.T, g *group) string {
	record := func(e history.Event) (history.Event, error) { return e, nil }
	d := fence.New([]string{"c1", "c2", "c3"}, hostPower{g}, record, t.Logf)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.Serve(ln)
	t.Cleanup(d.Close)
	return "http://" + ln.Addr().String()
}
