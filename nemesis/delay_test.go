package nemesis

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/faultproxy"
)

// proxiedEnv is the fake run with a real Toxiproxy (in this process) between its
// candidates and a real echo server standing in for the one store endpoint.
type proxiedEnv struct {
	*fakeEnv
	px *faultproxy.Proxy
}

func (e proxiedEnv) StoreProxy() StoreProxy { return e.px }

func newProxiedEnv(t *testing.T) proxiedEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	echoLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echoLn.Close() })
	go func() {
		for {
			c, err := echoLn.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go faultproxy.Serve(ctx, apiLn, io.Discard)
	px, err := faultproxy.Setup(ctx, faultproxy.NewClient(apiLn.Addr().String()), "127.0.0.1", "127.0.0.1", 0, []string{"c1", "c2", "c3"}, []string{echoLn.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close(context.Background()) })
	return proxiedEnv{threeByThree(t), px}
}

// rtt is the median of 5 one-line round trips from candidate through its proxy link.
func (e proxiedEnv) rtt(t *testing.T, candidate string) time.Duration {
	t.Helper()
	c, err := net.DialTimeout("tcp", e.px.Endpoints(candidate)[0], 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rd := bufio.NewReader(c)
	var best []time.Duration
	for range 5 {
		t0 := time.Now()
		c.Write([]byte("x\n"))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := rd.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		best = append(best, time.Since(t0))
	}
	return median(best)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// delay on one candidate puts latency toxics on that candidate's store links only, in the
// streams dir names, slows its round trip by at least the latency per direction, and its
// heal takes the toxics off. Upper bounds on round trips are measured by the chaos test
// TestChaosDelayThroughProxy, not here: a loaded machine stretches any round trip.
func TestDelayThroughRealProxy(t *testing.T) {
	cases := []struct {
		dir     string
		streams []string
		want    time.Duration // added to a round trip by latency=80ms
	}{
		{"both", []string{"downstream", "upstream"}, 160 * time.Millisecond},
		{"out", []string{"upstream"}, 80 * time.Millisecond},
		{"in", []string{"downstream"}, 80 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			e := newProxiedEnv(t)
			n, done := startPlan(t, e, "delay:target=node:c2,latency=80ms,dir="+c.dir+",at=0s,for=1500ms")
			waitStart(t, e.fakeEnv)
			if got := toxicSummary(t, e, "c2"); !slices.Equal(got, toxicsWant("latency", "latency=80", c.streams)) {
				t.Errorf("c2's links under delay dir=%s carry %v, want %v", c.dir, got, toxicsWant("latency", "latency=80", c.streams))
			}
			if got := toxicSummary(t, e, "c1"); len(got) != 0 {
				t.Errorf("c1 is not targeted but its links carry %v", got)
			}
			slow, other := e.rtt(t, "c2"), e.rtt(t, "c1")
			t.Logf("dir=%s: c2 round trip %v, c1 %v", c.dir, slow, other)
			if slow < c.want {
				t.Errorf("c2's round trip under delay latency=80ms dir=%s is %v, want at least %v", c.dir, slow, c.want)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := n.HealAll(context.Background()); err != nil {
				t.Fatal(err)
			}
			assertNoToxics(t, e)
			e.rtt(t, "c2") // the healed link still carries traffic
			for _, ev := range e.events {
				if ev.Err != "" {
					t.Errorf("%s recorded error %q", ev.Kind, ev.Err)
				}
			}
		})
	}
}

// toxicSummary lists the toxics on candidate's links as "link type stream attr=value ...",
// sorted, so a test compares what the fault configured rather than timing it.
func toxicSummary(t *testing.T, e proxiedEnv, candidate string) []string {
	t.Helper()
	var out []string
	for _, link := range e.px.Links(candidate) {
		tx, err := e.px.Toxics(context.Background(), link)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range tx {
			var attrs []string
			for k, v := range x.Attributes {
				if f, ok := v.(float64); ok && f == 0 {
					continue // Toxiproxy lists unset attributes as 0
				}
				attrs = append(attrs, fmt.Sprintf("%s=%v", k, v))
			}
			slices.Sort(attrs)
			out = append(out, strings.Join(append([]string{link, x.Type, x.Stream}, attrs...), " "))
		}
	}
	slices.Sort(out)
	return out
}

// toxicsWant is toxicSummary's answer for one toxic of typ with attrs on each stream of
// every link of the proxied env's one store endpoint, for candidate c2.
func toxicsWant(typ, attrs string, streams []string) []string {
	var out []string
	for _, s := range streams {
		out = append(out, strings.TrimSpace(faultproxy.LinkName("c2", 0)+" "+typ+" "+s+" "+attrs))
	}
	slices.Sort(out)
	return out
}

// An interrupted run: HealAll while the delay is in effect removes the toxics.
func TestDelayHealAllMidFault(t *testing.T) {
	e := newProxiedEnv(t)
	n, done := startPlan(t, e, "delay:target=all-candidates,latency=50ms,latency-jitter=10ms,at=0s,for=1m")
	waitStart(t, e.fakeEnv)
	if got := e.rtt(t, "c3"); got < 80*time.Millisecond {
		t.Fatalf("c3 round trip %v under 2×(50±10)ms, want >= 80ms", got)
	}
	if err := n.HealAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	assertNoToxics(t, e)
}

// Without a proxy in the run, a delay fault is recorded with the reason, not faked.
func TestDelayWithoutProxy(t *testing.T) {
	e := threeByThree(t)
	e.t = nil // the fault's error is expected
	n, done := startPlan(t, e, "delay:target=node:c1,at=0s,for=200ms")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n.HealAll(context.Background())
	starts := e.eventsOf("fault-start")
	if len(starts) != 1 || !strings.Contains(starts[0].Err, "needs the store fault proxy") {
		t.Fatalf("fault-start events %+v, want one with the missing-proxy reason", starts)
	}
}

func startPlan(t *testing.T, env interface {
	Env
	topo() Topology
}, spec string) (*Nemesis, chan error) {
	t.Helper()
	n, _, done := startPlanOn(t, env, nil, env.topo(), spec, 2*time.Minute, 0)
	return n, done
}

func waitStart(t *testing.T, e *fakeEnv) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); len(e.eventsOf("fault-start")) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no fault-start within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func assertNoToxics(t *testing.T, e proxiedEnv) {
	t.Helper()
	for _, c := range []string{"c1", "c2", "c3"} {
		for _, link := range e.px.Links(c) {
			names, err := e.px.ToxicNames(context.Background(), link)
			if err != nil || len(names) != 0 {
				t.Errorf("link %s after heal: toxics %v, %v; want none", link, names, err)
			}
		}
	}
}
