//go:build chaos

package nemesis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/faultproxy"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// pingPair runs n Redis PINGs over each of two TCP connections from inside node (bash
// /dev/tcp) to host:portA and host:portB, alternately, and returns each connection's round
// trips, timed in the container (what a candidate there sees) with bash's own clock, no
// fork per sample. Taken in turns, both see the same load, so their difference is the
// delay; a loaded machine inflates each (80 ms over a 100 ms delay at load 40, timed with
// date(1) and the two measured a second apart).
func pingPair(t *testing.T, ctx context.Context, node *platform.Node, host string, portA, portB, n int) (a, b []time.Duration) {
	t.Helper()
	script := fmt.Sprintf(`exec 3<>/dev/tcp/%[1]s/%[2]d 4<>/dev/tcp/%[1]s/%[3]d || exit 3
for i in $(seq %[4]d); do for fd in 3 4; do s=${EPOCHREALTIME/./}; printf 'PING\r\n' >&$fd; read -r -t 10 line <&$fd || exit 4; e=${EPOCHREALTIME/./}; echo $fd $((e-s)); done; done`, host, portA, portB, n)
	code, out, err := node.Exec(ctx, []string{"bash", "-c", script})
	if err != nil || code != 0 {
		t.Fatalf("ping from %s to %s:%d and :%d: exit %d %v: %s", node.Name(), host, portA, portB, code, err, out)
	}
	for l := range strings.Lines(out) {
		var fd, us int64
		if _, err := fmt.Sscan(l, &fd, &us); err != nil {
			continue
		}
		if fd == 3 {
			a = append(a, time.Duration(us)*time.Microsecond)
		} else {
			b = append(b, time.Duration(us)*time.Microsecond)
		}
	}
	if len(a) != n || len(b) != n {
		t.Fatalf("ping output %q, want %d round trips on each connection", out, n)
	}
	return a, b
}

// A real fault-proxy container (the candidate image's faultproxy) between two candidate
// containers and a real Redis: a delay on c2 adds 2×latency to c2's round trips as timed
// inside c2, c1's link beside it keeps its speed, and the heal takes the delay away.
func TestChaosDelayThroughProxy(t *testing.T) {
	ctx, e := newChaosEnv(t, storekinds.Redis, 1) // c2 is a bash probe
	px, err := e.eng.Start(ctx, e.runID, e.net, platform.NodeSpec{
		Name: "store-proxy", Role: "store-proxy", Image: e.imgs[images.RoleCandidate],
		Cmd: []string{"faultproxy"}, ExposedPorts: []string{faultproxy.APIPort + "/tcp"},
		Wait:   platform.WaitHTTP(faultproxy.APIPort, "/version", 30*time.Second),
		LogDir: e.logDir,
	})
	if px != nil {
		t.Cleanup(func() { px.Terminate(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	api, err := px.Endpoint(ctx, faultproxy.APIPort)
	if err != nil {
		t.Fatal(err)
	}
	e.proxy, err = faultproxy.Setup(ctx, faultproxy.NewClient(api), "store-proxy", "0.0.0.0", faultproxy.FirstLinkPort,
		[]string{"c1", "c2"}, e.cluster.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	c2Port := faultproxy.FirstLinkPort + 1 // c1's link is the first
	if got := e.proxy.Endpoints("c2"); len(got) != 1 || got[0] != fmt.Sprintf("store-proxy:%d", c2Port) {
		t.Fatalf("c2's endpoints %v", got)
	}
	probe := e.node("c2")
	c1Port := faultproxy.FirstLinkPort
	c2Idle, c1Idle := pingPair(t, ctx, probe, "store-proxy", c2Port, c1Port, 20)
	direct, _ := pingPair(t, ctx, probe, e.store[0].Name(), 6379, 6379, 10)
	t.Logf("PING round trip from c2: %v direct, %v and %v through the idle proxy (c2's and c1's links)", median(direct), median(c2Idle), median(c1Idle))

	for _, lat := range []time.Duration{50 * time.Millisecond, 200 * time.Millisecond} {
		_, _, heal := applyNow(t, ctx, e, fmt.Sprintf("delay:target=node:c2,latency=%s,dir=both,at=0s,for=1m", lat), 1)
		rtts, c1 := pingPair(t, ctx, probe, "store-proxy", c2Port, c1Port, 20)
		got, other := median(rtts), median(c1)
		added := got - other
		t.Logf("latency=%v dir=both: c2 round trip median %v (min %v, max %v); c1's link beside it %v: added %v", lat, got, minDur(rtts), maxDur(rtts), other, added)
		// Both directions carry the delay, so no round trip of c2's link is shorter than
		// 2×latency; c1's link carries none (else the difference would shrink), and the proxy
		// adds nothing beyond what was asked (the slack is the proxy's own scheduling).
		if got < 2*lat {
			t.Errorf("latency=%v dir=both: c2's round trip is %v, under 2×latency", lat, got)
		}
		if added < 2*lat-20*time.Millisecond || added > 2*lat+50*time.Millisecond {
			t.Errorf("latency=%v dir=both: c2's round trip %v is %v above c1's undelayed link (%v), want %v..%v", lat, got, added, other, 2*lat-20*time.Millisecond, 2*lat+50*time.Millisecond)
		}
		if err := heal(); err != nil {
			t.Fatal(err)
		}
		c2After, c1After := pingPair(t, ctx, probe, "store-proxy", c2Port, c1Port, 10)
		if d := median(c2After) - median(c1After); d > 30*time.Millisecond {
			t.Errorf("after heal c2's round trip is %v, %v above c1's link", median(c2After), d)
		}
		for _, c := range []string{"c1", "c2"} {
			for _, l := range e.proxy.Links(c) {
				if names, err := e.proxy.ToxicNames(ctx, l); err != nil || len(names) > 0 {
					t.Errorf("link %s after heal: %v %v", l, names, err)
				}
			}
		}
		e.resetEvents()
	}
	assertClean(t, ctx, e)
}

func minDur(d []time.Duration) time.Duration {
	m := d[0]
	for _, x := range d {
		m = min(m, x)
	}
	return m
}

func maxDur(d []time.Duration) time.Duration {
	m := d[0]
	for _, x := range d {
		m = max(m, x)
	}
	return m
}

// startStoreProxy starts a real store-proxy container and links c1.. to the store.
func startStoreProxy(t *testing.T, ctx context.Context, e *chaosEnv, cands []string) {
	t.Helper()
	px, err := e.eng.Start(ctx, e.runID, e.net, platform.NodeSpec{
		Name: "store-proxy", Role: "store-proxy", Image: e.imgs[images.RoleCandidate],
		Cmd: []string{"faultproxy"}, ExposedPorts: []string{faultproxy.APIPort + "/tcp"},
		Wait:   platform.WaitHTTP(faultproxy.APIPort, "/version", 30*time.Second),
		LogDir: e.logDir,
	})
	if px != nil {
		t.Cleanup(func() { px.Terminate(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	api, err := px.Endpoint(ctx, faultproxy.APIPort)
	if err != nil {
		t.Fatal(err)
	}
	e.proxy, err = faultproxy.Setup(ctx, faultproxy.NewClient(api), "store-proxy", "0.0.0.0", faultproxy.FirstLinkPort, cands, e.cluster.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
}

// probeOut runs a bash script in node and returns its output's fields.
func probeOut(t *testing.T, ctx context.Context, node *platform.Node, script string) []string {
	t.Helper()
	code, out, err := node.Exec(ctx, []string{"bash", "-c", script})
	if err != nil || code != 0 {
		t.Fatalf("probe in %s: exit %d %v: %s", node.Name(), code, err, out)
	}
	return strings.Fields(out)
}

// A hung-or-failed Redis PING through the proxy: prints "answer:+PONG NS", "eof:1 NS" (the
// connection ended), "reset:1 NS" (connection reset by peer) or "timeout:142 NS" (read -t
// ran out).
const pingOnce = `exec 3<>/dev/tcp/store-proxy/%d || exit 3
s=$(date +%%s%%N); printf 'PING\r\n' >&3
if read -r -t %d line <&3 2>/tmp/readerr; then r="answer:${line%%$'\r'}"; else c=$?; if [ $c -gt 128 ]; then r="timeout:$c"; elif grep -q reset /tmp/readerr; then r="reset:$c"; else r="eof:$c"; fi; fi
e=$(date +%%s%%N); echo "$r $((e-s))"`

// pingHeld is pingOnce that creates /tmp/ping-sent once its PING is written (a test waits
// for that) and prints, as a third field, the wall-clock ns at which it ended.
var pingHeld = "rm -f /tmp/ping-sent; " + strings.NewReplacer(
	`printf 'PING\r\n' >&3`, `printf 'PING\r\n' >&3; : >/tmp/ping-sent`,
	`echo "$r $((e-s))"`, `echo "$r $((e-s)) $e"`).Replace(pingOnce)

func pingResult(t *testing.T, f []string) (string, time.Duration) {
	t.Helper()
	if len(f) != 2 {
		t.Fatalf("ping probe output %q", f)
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatalf("ping probe output %q", f)
	}
	r, _, _ := strings.Cut(f[0], ":")
	return r, time.Duration(ns)
}

// The other proxy kinds through a real store-proxy container in front of a real Redis,
// measured inside the probe container c2: bandwidth by a 200 KB SET and GET, half-open by
// a PING that hangs and ends when the fault heals, reset by a PING that fails at once,
// slow-close by Redis still listing a connection the probe has closed.
func TestChaosProxyKindsThroughProxy(t *testing.T) {
	ctx, e := newChaosEnv(t, storekinds.Redis, 1)
	startStoreProxy(t, ctx, e, []string{"c1", "c2"})
	probe := e.node("c2")
	port := faultproxy.FirstLinkPort + 1
	redis := e.store[0].Name()

	t.Run("bandwidth", func(t *testing.T) {
		const size, rate = 200000, 100
		script := fmt.Sprintf(`head -c %[1]d /dev/zero | tr '\0' x > /tmp/v
exec 3<>/dev/tcp/store-proxy/%[2]d || exit 3
s=$(date +%%s%%N); { printf '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%[1]d\r\n'; cat /tmp/v; printf '\r\n'; } >&3
read -r -t 30 ok <&3 || exit 4; e=$(date +%%s%%N); echo $((e-s))
s=$(date +%%s%%N); printf '*2\r\n$3\r\nGET\r\n$1\r\nk\r\n' >&3
read -r -t 30 hdr <&3 || exit 5; head -c %[3]d <&3 | wc -c; e=$(date +%%s%%N); echo $((e-s))`, size, port, size+2)
		base := probeOut(t, ctx, probe, script)
		_, _, heal := applyNow(t, ctx, e, fmt.Sprintf("bandwidth:target=node:c2,rate=%d,dir=both,at=0s,for=1m", rate), 1)
		got := probeOut(t, ctx, probe, script)
		if err := heal(); err != nil {
			t.Fatal(err)
		}
		after := probeOut(t, ctx, probe, script)
		ns := func(f []string, i int) time.Duration { v, _ := strconv.ParseInt(f[i], 10, 64); return time.Duration(v) }
		up, down := ns(got, 0), ns(got, 2)
		t.Logf("200 KB SET/GET through the proxy: idle %v/%v; rate=%d KB/s: %v/%v (%.1f/%.1f KB/s); after heal %v/%v",
			ns(base, 0), ns(base, 2), rate, up, down, size/1000/up.Seconds(), size/1000/down.Seconds(), ns(after, 0), ns(after, 2))
		if got[1] != strconv.Itoa(size+2) {
			t.Fatalf("GET returned %s bytes, want %d", got[1], size+2)
		}
		want := time.Duration(size/rate) * time.Millisecond
		for name, d := range map[string]time.Duration{"upload (SET)": up, "download (GET)": down} {
			if d < want*9/10 || d > want*3/2 {
				t.Errorf("%s of %d bytes at rate=%d took %v, want about %v", name, size, rate, d, want)
			}
		}
		if ns(after, 0) > 500*time.Millisecond || ns(after, 2) > 500*time.Millisecond {
			t.Errorf("after heal the transfer took %v/%v, want full speed", ns(after, 0), ns(after, 2))
		}
		e.resetEvents()
	})

	t.Run("half-open", func(t *testing.T) {
		_, _, heal := applyNow(t, ctx, e, "half-open:target=node:c2,at=0s,for=1m", 1)
		if r, d := pingResult(t, probeOut(t, ctx, probe, fmt.Sprintf(pingOnce, port, 1))); r != "timeout" {
			t.Fatalf("PING under half-open: %s after %v, want it to hang", r, d)
		}
		type res struct {
			f   []string
			err error
		}
		hung := make(chan res, 1)
		go func() {
			code, out, err := probe.Exec(ctx, []string{"bash", "-c", fmt.Sprintf(pingHeld, port, 30)})
			if err == nil && code != 0 {
				err = fmt.Errorf("exit %d: %s", code, out)
			}
			hung <- res{strings.Fields(out), err}
		}()
		// Heal once the PING is written (the probe's marker), not after a guess at how long
		// an exec takes; that it was held until the heal is read from when it ended.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if code, _, err := probe.Exec(ctx, []string{"test", "-e", "/tmp/ping-sent"}); err == nil && code == 0 {
				break
			}
			select {
			case r := <-hung:
				t.Fatalf("PING under half-open ended before the heal: %v %v", r.f, r.err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("the probe wrote no PING within a minute")
			}
		}
		healStart := time.Now()
		if err := heal(); err != nil {
			t.Fatal(err)
		}
		r := <-hung
		if r.err != nil {
			t.Fatal(r.err)
		}
		if len(r.f) != 3 {
			t.Fatalf("held PING probe output %q", r.f)
		}
		kind, d := pingResult(t, r.f[:2])
		end, _ := strconv.ParseInt(r.f[2], 10, 64)
		// The probe's date and the host's clock are one kernel clock.
		sinceHeal := time.Duration(end - healStart.UnixNano())
		t.Logf("PING sent under half-open: %s after %v, %v after the heal began", kind, d, sinceHeal)
		if kind != "eof" || sinceHeal < 0 {
			t.Errorf("held PING: %s %v after the heal began, want it held until the heal and then failed (connection closed)", kind, sinceHeal)
		}
		if r, d := pingResult(t, probeOut(t, ctx, probe, fmt.Sprintf(pingOnce, port, 5))); r != "answer" {
			t.Errorf("PING after heal: %s after %v, want PONG", r, d)
		}
		e.resetEvents()
	})

	t.Run("reset", func(t *testing.T) {
		_, _, heal := applyNow(t, ctx, e, "reset:target=node:c2,at=0s,for=1m", 1)
		r, d := pingResult(t, probeOut(t, ctx, probe, fmt.Sprintf(pingOnce, port, 5)))
		t.Logf("PING under reset: %s after %v", r, d)
		if r != "reset" || d > time.Second {
			t.Errorf("PING under reset: %s after %v, want the connection reset at once", r, d)
		}
		if err := heal(); err != nil {
			t.Fatal(err)
		}
		if r, d := pingResult(t, probeOut(t, ctx, probe, fmt.Sprintf(pingOnce, port, 5))); r != "answer" {
			t.Errorf("PING after heal: %s after %v, want PONG", r, d)
		}
		e.resetEvents()
	})

	t.Run("slow-close", func(t *testing.T) {
		// The probe names a connection through the proxy, closes it, and asks Redis directly
		// (not through the proxy) whether that client is still connected.
		script := fmt.Sprintf(`exec 3<>/dev/tcp/store-proxy/%d || exit 3
printf 'CLIENT SETNAME sc\r\n' >&3; read -r -t 5 ok <&3 || exit 4
exec 3>&-; s=$(date +%%s%%N)
while :; do
  exec 4<>/dev/tcp/%s/6379 || exit 5
  printf 'CLIENT LIST\r\n' >&4; read -r -t 5 hdr <&4 || exit 6; n=${hdr#$}; n=${n%%$'\r'}
  body=$(head -c $((n+2)) <&4); exec 4>&-
  case "$body" in *name=sc*) ;; *) break;; esac
  sleep 0.05
done
e=$(date +%%s%%N); echo $((e-s))`, port, redis)
		gone := func() time.Duration {
			f := probeOut(t, ctx, probe, script)
			v, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
			return time.Duration(v)
		}
		base := gone()
		_, _, heal := applyNow(t, ctx, e, "slow-close:target=node:c2,close-delay=2s,dir=out,at=0s,for=1m", 1)
		got := gone()
		if err := heal(); err != nil {
			t.Fatal(err)
		}
		after := gone()
		t.Logf("Redis saw the closed connection go after %v idle, %v under close-delay=2s dir=out, %v after heal", base, got, after)
		if got < 1900*time.Millisecond || got > 3*time.Second {
			t.Errorf("under close-delay=2s Redis saw the close after %v, want 1.9..3 s (timed from after the close)", got)
		}
		if base > 500*time.Millisecond || after > 500*time.Millisecond {
			t.Errorf("without the fault Redis saw the close after %v / %v, want at once", base, after)
		}
		e.resetEvents()
	})
	for _, c := range []string{"c1", "c2"} {
		for _, l := range e.proxy.Links(c) {
			if names, err := e.proxy.ToxicNames(ctx, l); err != nil || len(names) > 0 {
				t.Errorf("link %s after heal: %v %v", l, names, err)
			}
		}
	}
	assertClean(t, ctx, e)
}
