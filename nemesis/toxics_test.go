package nemesis

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The proxy fault kinds other than delay, each through a real in-process Toxiproxy in front
// of a real echo server, checked from the candidate's side of its link.

func dialLink(t *testing.T, e proxiedEnv, candidate string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", e.px.Endpoints(candidate)[0], 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// echoTime sends size bytes and reads them back, returning how long the transfer took.
func echoTime(t *testing.T, c net.Conn, size int) (time.Duration, error) {
	t.Helper()
	payload := bytes.Repeat([]byte("x"), size)
	t0 := time.Now()
	errc := make(chan error, 1)
	go func() { _, err := c.Write(payload); errc <- err }()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, size)); err != nil {
		return 0, err
	}
	return time.Since(t0), <-errc
}

// roundTrip writes one line and waits up to wait for its echo.
func roundTrip(c net.Conn, wait time.Duration) error {
	if _, err := c.Write([]byte("x\n")); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := io.ReadFull(c, make([]byte, 2))
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func checkHealed(t *testing.T, e proxiedEnv, n *Nemesis, done chan error) {
	t.Helper()
	if err := n.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	assertNoToxics(t, e)
	for _, ev := range e.events {
		if ev.Err != "" {
			t.Errorf("%s recorded error %q", ev.Kind, ev.Err)
		}
	}
}

// bandwidth: a rate toxic on the targeted candidate's link only; 64 KB through the 64 KB/s
// link takes about a second (a lower bound: a loaded machine only makes it slower), and the
// heal takes the toxics off. The chaos test TestChaosProxyKindsThroughProxy bounds it above.
func TestBandwidthThroughRealProxy(t *testing.T) {
	e := newProxiedEnv(t)
	n, done := startPlan(t, e, "bandwidth:target=node:c2,rate=64,dir=both,at=0s,for=1m")
	waitStart(t, e.fakeEnv)
	const size = 64000
	slow, err := echoTime(t, dialLink(t, e, "c2"), size)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := echoTime(t, dialLink(t, e, "c1"), size)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("64000 bytes echoed: %v at rate=64 (%.1f KB/s), %v on the untargeted link", slow, size/1000/slow.Seconds(), fast)
	if slow < 850*time.Millisecond {
		t.Errorf("64000 bytes at 64 KB/s took %v, want about 1 s (at least 0.85 s)", slow)
	}
	if got, want := toxicSummary(t, e, "c2"), toxicsWant("bandwidth", "rate=64", []string{"downstream", "upstream"}); !slices.Equal(got, want) {
		t.Errorf("c2's links under bandwidth carry %v, want %v", got, want)
	}
	if got := toxicSummary(t, e, "c1"); len(got) != 0 {
		t.Errorf("c1 is not targeted but its links carry %v", got)
	}
	checkHealed(t, e, n, done)
	if _, err := echoTime(t, dialLink(t, e, "c2"), size); err != nil {
		t.Errorf("c2 after heal: %v", err)
	}
}

// half-open with close-after=0: an open connection and a new one both accept data and hang;
// the heal closes the hung connections (the candidate reads end of stream) and a new
// connection works.
func TestHalfOpenThroughRealProxy(t *testing.T) {
	e := newProxiedEnv(t)
	before := dialLink(t, e, "c2")
	if err := roundTrip(before, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	n, done := startPlan(t, e, "half-open:target=node:c2,at=0s,for=1m")
	waitStart(t, e.fakeEnv)
	if err := roundTrip(before, 500*time.Millisecond); !isTimeout(err) {
		t.Fatalf("open connection under half-open: %v, want the request to hang (timeout)", err)
	}
	during := dialLink(t, e, "c2")
	if err := roundTrip(during, 500*time.Millisecond); !isTimeout(err) {
		t.Fatalf("new connection under half-open: %v, want it accepted and the request to hang", err)
	}
	if err := roundTrip(dialLink(t, e, "c1"), 30*time.Second); err != nil {
		t.Errorf("c1 is not targeted but its request failed: %v", err)
	}
	checkHealed(t, e, n, done)
	for name, c := range map[string]net.Conn{"open before": before, "opened during": during} {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("connection %s the fault, after heal: read %v, want end of stream (the proxy closes hung connections)", name, err)
		}
	}
	if err := roundTrip(dialLink(t, e, "c2"), 30*time.Second); err != nil {
		t.Errorf("new connection after heal: %v", err)
	}
}

// half-open with close-after: a connection nothing is sent into is closed after that long
// (not before; a loaded machine may close it later), well before the fault's heal would.
func TestHalfOpenCloseAfter(t *testing.T) {
	e := newProxiedEnv(t)
	c := dialLink(t, e, "c3")
	t0 := time.Now() // before the plan starts: close-after counts from a later instant
	n, done := startPlan(t, e, "half-open:target=node:c3,close-after=300ms,dir=both,at=0s,for=1m")
	waitStart(t, e.fakeEnv)
	c.SetReadDeadline(time.Now().Add(30 * time.Second)) // the heal, at 1 min, is not awaited
	_, err := c.Read(make([]byte, 1))
	took := time.Since(t0)
	t.Logf("idle connection closed %v after the plan started (close-after=300ms): %v", took, err)
	if err != io.EOF || took < 300*time.Millisecond {
		t.Errorf("idle connection under close-after=300ms: %v after %v, want end of stream after at least 300ms", err, took)
	}
	checkHealed(t, e, n, done)
}

// closeToEOF half-closes c and returns how long until the echo server's close comes back.
func closeToEOF(t *testing.T, c *net.TCPConn, wait time.Duration) (time.Duration, error) {
	t.Helper()
	t0 := time.Now()
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.Read(make([]byte, 1))
	return time.Since(t0), err
}

// slow-close: the candidate's close reaches the server at least close-delay late (the
// server's own close follows it), data still passes, the untargeted link has no toxic; a
// close held when the fault heals is passed on by the heal rather than lost.
func TestSlowCloseThroughRealProxy(t *testing.T) {
	e := newProxiedEnv(t)
	n, done := startPlan(t, e, "slow-close:target=node:c1,close-delay=400ms,dir=out,at=0s,for=1m")
	waitStart(t, e.fakeEnv)
	c := dialLink(t, e, "c1")
	if err := roundTrip(c, 30*time.Second); err != nil {
		t.Fatalf("data under slow-close: %v", err)
	}
	took, err := closeToEOF(t, c, 30*time.Second)
	other, err2 := closeToEOF(t, dialLink(t, e, "c2"), 30*time.Second)
	t.Logf("close to end of stream: %v under close-delay=400ms, %v on the untargeted link", took, other)
	if err != io.EOF || took < 400*time.Millisecond {
		t.Errorf("close under close-delay=400ms: %v after %v, want end of stream after at least 400ms", err, took)
	}
	if err2 != io.EOF {
		t.Errorf("c2 is not targeted but its close ended in %v after %v, want end of stream", err2, other)
	}
	if got := toxicSummary(t, e, "c2"); len(got) != 0 {
		t.Errorf("c2 is not targeted but its links carry %v", got)
	}
	checkHealed(t, e, n, done)

	// A close still held at the heal.
	e2 := newProxiedEnv(t)
	n2, done2 := startPlan(t, e2, "slow-close:target=node:c1,close-delay=1m,at=0s,for=1m")
	waitStart(t, e2.fakeEnv)
	held := dialLink(t, e2, "c1")
	if _, err := closeToEOF(t, held, 500*time.Millisecond); !isTimeout(err) {
		t.Fatalf("close under close-delay=1m: %v, want it held", err)
	}
	t0 := time.Now()
	checkHealed(t, e2, n2, done2)
	held.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := held.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("close held when the fault healed: %v %v after the heal began, want it passed on (end of stream)", err, time.Since(t0))
	}
}

// reset: a connection open before the fault is closed at its next request, a new one is
// reset (ECONNRESET); requests never get an answer; after the heal new connections work.
func TestResetThroughRealProxy(t *testing.T) {
	e := newProxiedEnv(t)
	before := dialLink(t, e, "c2")
	if err := roundTrip(before, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	n, done := startPlan(t, e, "reset:target=node:c2,at=0s,for=1m")
	waitStart(t, e.fakeEnv)
	t0 := time.Now()
	err := roundTrip(before, 30*time.Second)
	t.Logf("open connection under reset: %v after %v", err, time.Since(t0))
	if err == nil || isTimeout(err) {
		t.Errorf("open connection under reset: %v, want the request to fail at once", err)
	}
	during := dialLink(t, e, "c2")
	t0 = time.Now()
	err = roundTrip(during, 30*time.Second)
	t.Logf("new connection under reset: %v after %v", err, time.Since(t0))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("new connection under reset: %v after %v, want connection reset", err, time.Since(t0))
	}
	if err := roundTrip(dialLink(t, e, "c1"), 30*time.Second); err != nil {
		t.Errorf("c1 is not targeted but its request failed: %v", err)
	}
	checkHealed(t, e, n, done)
	if err := roundTrip(dialLink(t, e, "c2"), 30*time.Second); err != nil {
		t.Errorf("new connection after heal: %v", err)
	}
}

// Interrupted runs: HealAll in the middle of each proxy fault leaves no toxic behind.
func TestProxyKindsHealAllMidFault(t *testing.T) {
	for _, spec := range []string{"bandwidth:rate=1,", "half-open:", "slow-close:close-delay=1m,", "reset:dir=in,"} {
		t.Run(strings.Split(spec, ":")[0], func(t *testing.T) {
			e := newProxiedEnv(t)
			n, done := startPlan(t, e, spec+"target=all-candidates,at=0s,for=1m")
			waitStart(t, e.fakeEnv)
			for _, c := range []string{"c1", "c2", "c3"} {
				for _, l := range e.px.Links(c) {
					if names, err := e.px.ToxicNames(context.Background(), l); err != nil || len(names) == 0 {
						t.Fatalf("%s in effect but link %s lists toxics %v (%v)", spec, l, names, err)
					}
				}
			}
			checkHealed(t, e, n, done)
		})
	}
}
