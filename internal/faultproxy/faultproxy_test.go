package faultproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"slices"
	"testing"
	"time"
)

// echo serves one-line echoes on a loopback port until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrips measures n request/response round trips of one line over one connection.
func roundTrips(t *testing.T, addr string, n int) []time.Duration {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rd := bufio.NewReader(c)
	var out []time.Duration
	for range n {
		t0 := time.Now()
		if _, err := c.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := rd.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Since(t0))
	}
	return out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// A real Toxiproxy behind the project's API handler: a latency toxic on both streams of a
// link adds at least twice its latency to a round trip, and removing it takes the toxics off
// the link. No upper bound on a round trip: a loaded machine stretches any of them (the
// chaos test TestChaosDelayThroughProxy measures the proxy's overhead in containers).
func TestLatencyThroughProxy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, io.Discard) }()
	c := NewClient(ln.Addr().String())
	if err := c.Version(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.CreateLink(ctx, "c1-0", "127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Listen
	base := median(roundTrips(t, listen, 20))
	const lat = 100 * time.Millisecond
	for _, stream := range []string{"upstream", "downstream"} {
		if err := c.AddToxic(ctx, "c1-0", Toxic{Name: "f1-" + stream, Type: "latency", Stream: stream, Attributes: map[string]any{"latency": lat.Milliseconds()}}); err != nil {
			t.Fatal(err)
		}
	}
	got := median(roundTrips(t, listen, 10))
	t.Logf("round trip: %v without toxics, %v with 2×%v latency", base, got, lat)
	if got < 2*lat {
		t.Errorf("round trip with latency %v on both streams is %v, want at least %v", lat, got, 2*lat)
	}
	tx, err := c.Toxics(ctx, "c1-0")
	if err != nil || len(tx) != 2 {
		t.Fatalf("toxics listed: %v, %v; want 2", tx, err)
	}
	for _, x := range tx {
		if x.Type != "latency" || x.Attributes["latency"] != float64(lat.Milliseconds()) {
			t.Errorf("toxic listed as %+v, want type latency with latency %d", x, lat.Milliseconds())
		}
	}
	for _, stream := range []string{"upstream", "downstream"} {
		if err := c.RemoveToxic(ctx, "c1-0", "f1-"+stream); err != nil {
			t.Fatal(err)
		}
	}
	if tx, err := c.Toxics(ctx, "c1-0"); err != nil || len(tx) != 0 {
		t.Fatalf("toxics after removal: %v, %v; want none", tx, err)
	}
	roundTrips(t, listen, 1) // the link still carries traffic
	if err := c.RemoveToxic(ctx, "c1-0", "nope"); err != nil {
		t.Errorf("removing a toxic that is already gone: %v, want success (heals may race)", err)
	}
	if err := c.RemoveToxic(ctx, "no-such-link", "nope"); err == nil {
		t.Error("removing a toxic from a link that does not exist succeeded, want an error")
	}
	if err := c.DeleteLink(ctx, "c1-0"); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", listen, 30*time.Second); err == nil {
		t.Error("the deleted link still accepts connections")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
