package harness

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

func TestPidGone(t *testing.T) {
	if pidGone(os.Getpid()) {
		t.Fatal("this process reads as gone")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	pid := cmd.Process.Pid
	if pidGone(pid) {
		t.Fatal("a running child reads as gone")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Killed but not reaped: a zombie, which counts as gone (the shim reaps a container's).
	for !pidGone(pid) {
	}
	cmd.Wait()
	if !pidGone(pid) {
		t.Error("a reaped child reads as alive")
	}
}

// TestFenceRequesterOnlyFromTheRunNetwork: the device serves only addresses of the run's
// candidates on the run's own network; another run's subnet (the host routes it to the
// gateway too) and an address of the run network that is no candidate's are refused.
func TestFenceRequesterOnlyFromTheRunNetwork(t *testing.T) {
	fd := &fenceDevice{net: &platform.Network{Subnet: netip.MustParsePrefix("198.18.7.0/24")}}
	fd.ips = map[netip.Addr]string{netip.MustParseAddr("198.18.7.3"): "c2"}
	rp := runPower{fd}
	ctx := context.Background()
	if who, ok := rp.Requester(ctx, netip.MustParseAddr("198.18.7.3")); !ok || who != "c2" {
		t.Errorf("a candidate's address: %q %v, want c2", who, ok)
	}
	for _, a := range []string{"198.18.8.3", "127.0.0.1", "198.18.7.9", "198.18.7.1"} {
		if who, ok := rp.Requester(ctx, netip.MustParseAddr(a)); ok {
			t.Errorf("%s accepted as %q: only the run's candidates may use the device", a, who)
		}
	}
}
