package harness

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/fence"
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

// TestFenceDeviceClosesOnInterrupt: an interrupted run closes its fence device at once, so
// a fence-slow heal waiting for a held request (F3) does not hold up the exit; the request
// is dropped, not carried out.
func TestFenceDeviceClosesOnInterrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), HistoryFile)
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	root, cancel := context.WithCancel(context.Background())
	defer cancel()
	fd := &fenceDevice{net: &platform.Network{Subnet: netip.MustParsePrefix("127.0.0.0/24")}, log: newJournalOn(w),
		names: []string{"c1", "c2"}, root: root}
	fd.ips = map[netip.Addr]string{netip.MustParseAddr("127.0.0.2"): "c1"}
	url := fd.URL()
	if url == "" {
		t.Skip("cannot listen on 127.0.0.1")
	}
	defer fd.close()
	heal, err := fd.dev.SetFault(1, fence.Slow, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	answered := make(chan error, 1)
	go func() {
		resp, err := cl.Post(url+"/off/c2", "", nil)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	deadline := time.Now().Add(5 * time.Second) // held once its fence-request is recorded
	for held := false; !held; {
		evs, _, _ := history.ReadFile(path)
		for _, e := range evs {
			held = held || e.Kind == history.KindFenceRequest
		}
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the device")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	healed := make(chan error, 1)
	go func() { healed <- heal(context.Background()) }()
	select {
	case err := <-healed:
		if err != nil {
			t.Errorf("heal: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the heal of a fence-slow fault still waited 5s after the run was interrupted")
	}
	if err := <-answered; err == nil {
		t.Error("the held request was answered after the interrupt")
	}
}
