//go:build chaos

package nemesis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/splitbrain-chaos/splitbrain/internal/faultproxy"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// pingRTTs runs n Redis PINGs over one TCP connection from inside node (bash /dev/tcp) to
// addr and returns each round trip, timed in the container: what a candidate there sees.
func pingRTTs(t *testing.T, ctx context.Context, node *platform.Node, host string, port, n int) []time.Duration {
	t.Helper()
	script := fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d || exit 3
for i in $(seq %d); do s=$(date +%%s%%N); printf 'PING\r\n' >&3; read -r -t 10 line <&3 || exit 4; e=$(date +%%s%%N); echo $((e-s)); done`, host, port, n)
	code, out, err := node.Exec(ctx, []string{"bash", "-c", script})
	if err != nil || code != 0 {
		t.Fatalf("ping from %s to %s:%d: exit %d %v: %s", node.Name(), host, port, code, err, out)
	}
	var rtts []time.Duration
	for _, l := range strings.Fields(out) {
		if ns, err := strconv.ParseInt(l, 10, 64); err == nil {
			rtts = append(rtts, time.Duration(ns))
		}
	}
	if len(rtts) != n {
		t.Fatalf("ping output %q, want %d round trips", out, n)
	}
	return rtts
}

// A real fault-proxy container (the candidate image's faultproxy) between two candidate
// containers and a real Redis: a delay on c2 adds 2×latency to c2's round trips as timed
// inside c2, c1 keeps its speed, and the heal takes it away.
func TestChaosDelayThroughProxy(t *testing.T) {
	ctx, e := newChaosEnv(t, stores.KindRedis, 1) // c2 is a bash probe
	px, err := e.eng.Start(ctx, e.runID, e.net, platform.NodeSpec{
		Name: "store-proxy", Role: "store-proxy", Image: e.imgs[images.RoleCandidate],
		Cmd: []string{"faultproxy"}, ExposedPorts: []string{faultproxy.APIPort + "/tcp"},
		Wait:   wait.ForHTTP("/version").WithPort(faultproxy.APIPort + "/tcp").WithStartupTimeout(30 * time.Second),
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
	base := median(pingRTTs(t, ctx, probe, "store-proxy", c2Port, 20))
	direct := median(pingRTTs(t, ctx, probe, e.store[0].Name(), 6379, 20))
	t.Logf("PING round trip from c2: %v direct, %v through the idle proxy", direct, base)

	for _, lat := range []time.Duration{50 * time.Millisecond, 200 * time.Millisecond} {
		_, _, heal := applyNow(t, ctx, e, fmt.Sprintf("delay:target=node:c2,latency=%s,dir=both,at=0s,for=1m", lat), 1)
		rtts := pingRTTs(t, ctx, probe, "store-proxy", c2Port, 20)
		got := median(rtts)
		other := median(pingRTTs(t, ctx, probe, "store-proxy", faultproxy.FirstLinkPort, 10))
		t.Logf("latency=%v dir=both: c2 round trip median %v (min %v, max %v), added %v; c1's link %v", lat, got, minDur(rtts), maxDur(rtts), got-base, other)
		if got < 2*lat || got > 2*lat+base+50*time.Millisecond {
			t.Errorf("latency=%v dir=both: c2's round trip is %v, want %v..%v", lat, got, 2*lat, 2*lat+base+50*time.Millisecond)
		}
		if other > base+30*time.Millisecond {
			t.Errorf("c1's link is not delayed but its round trip is %v", other)
		}
		if err := heal(); err != nil {
			t.Fatal(err)
		}
		if got := median(pingRTTs(t, ctx, probe, "store-proxy", c2Port, 10)); got > base+30*time.Millisecond {
			t.Errorf("after heal c2's round trip is %v, want about %v", got, base)
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
