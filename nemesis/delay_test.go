package nemesis

import (
	"bufio"
	"context"
	"io"
	"net"
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
	c, err := net.DialTimeout("tcp", e.px.Endpoints(candidate)[0], 5*time.Second)
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

// delay on one candidate slows that candidate's store link by its latency per direction,
// leaves the others alone, and its heal takes the toxics off (listing checked).
func TestDelayThroughRealProxy(t *testing.T) {
	cases := []struct {
		dir  string
		want time.Duration // added to a round trip by latency=80ms
	}{{"both", 160 * time.Millisecond}, {"out", 80 * time.Millisecond}, {"in", 80 * time.Millisecond}}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			e := newProxiedEnv(t)
			n, done := startPlan(t, e, "delay:target=node:c2,latency=80ms,dir="+c.dir+",at=0s,for=1500ms")
			waitStart(t, e.fakeEnv)
			slow, other := e.rtt(t, "c2"), e.rtt(t, "c1")
			t.Logf("dir=%s: c2 round trip %v, c1 %v", c.dir, slow, other)
			if slow < c.want || slow > c.want+40*time.Millisecond {
				t.Errorf("c2's round trip under delay latency=80ms dir=%s is %v, want %v..%v", c.dir, slow, c.want, c.want+40*time.Millisecond)
			}
			if other > 20*time.Millisecond {
				t.Errorf("c1 is not targeted but its round trip is %v", other)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := n.HealAll(context.Background()); err != nil {
				t.Fatal(err)
			}
			assertNoToxics(t, e)
			if got := e.rtt(t, "c2"); got > 20*time.Millisecond {
				t.Errorf("c2's round trip after heal is %v, want the delay gone", got)
			}
			for _, ev := range e.events {
				if ev.Err != "" {
					t.Errorf("%s recorded error %q", ev.Kind, ev.Err)
				}
			}
		})
	}
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
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(1, 2*time.Minute, env.topo())
	if err != nil {
		t.Fatal(err)
	}
	n := New(env, p.Topology)
	done := make(chan error, 1)
	go func() { done <- n.Run(context.Background(), p) }()
	return n, done
}

func waitStart(t *testing.T, e *fakeEnv) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(e.eventsOf("fault-start")) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no fault-start within 5 s")
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
