package runtime

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/workloads/resource"
)

func TestClockOffsetFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	var errs []error
	c := NewClock(path, func(err error) { errs = append(errs, err) })
	if w, m := c.WallOffset(), c.MonoOffset(); w != 0 || m != 0 {
		t.Fatalf("missing file: offsets %v, %v, want 0", w, m)
	}
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		c.reread()
	}
	// Unforced, the clock sees a new setting once its cached reading is older than
	// clockRefresh: poll for it (the deadline only ends a hung test).
	if err := os.WriteFile(path, []byte("1500000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); c.WallOffset() != 1500*time.Millisecond; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the clock never read the file's 1.5s (offset %v)", c.WallOffset())
		}
	}
	if w, m := c.WallOffset(), c.MonoOffset(); w != 1500*time.Millisecond || m != w {
		t.Fatalf("offsets %v, %v, want 1.5s on both lines", w, m)
	}
	// Wall is real time + the offset: bounded by real readings taken around it.
	r0 := time.Now()
	w := c.Wall()
	r1 := time.Now()
	if w.Before(r0.Add(1500*time.Millisecond).Round(0)) || w.After(r1.Add(1500*time.Millisecond).Round(0)) {
		t.Fatalf("Wall %v is not 1.5s ahead of real time [%v, %v]", w, r0, r1)
	}
	write(" -2000000000 ")
	if w := c.WallOffset(); w != -2*time.Second {
		t.Fatalf("offset %v, want -2s", w)
	}
	write("garbage")
	if w := c.WallOffset(); w != -2*time.Second {
		t.Fatalf("bad content changed the offset to %v; want the last good -2s", w)
	}
	c.reread()
	c.WallOffset()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "signed integer of ns") {
		t.Fatalf("want one clear error for bad content, got %v", errs)
	}
	write("")
	if w := c.WallOffset(); w != 0 {
		t.Fatalf("empty file: offset %v, want 0", w)
	}
	os.Remove(path)
	c.reread()
	if w := c.WallOffset(); w != 0 {
		t.Fatalf("removed file: offset %v, want 0", w)
	}
}

// A file with a rate makes both lines run at that rate from SINCE on; one number again puts
// the clock back to real speed. The offsets are checked against real readings taken around
// each call, so no sleep length matters.
func TestClockRateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	c := NewClock(path, func(err error) { t.Errorf("clock error: %v", err) })
	since := time.Now().Add(-10 * time.Second).UnixNano()
	if err := os.WriteFile(path, []byte(fmt.Sprintf("-1000000000 3 %d -4000000000\n", since)), 0o644); err != nil {
		t.Fatal(err)
	}
	// At SINCE the wall line read real - 1s and the monotonic line real - 4s; both gain 2 s
	// per real second since.
	r0 := time.Now().UnixNano()
	w, m := c.WallOffset(), c.MonoOffset()
	r1 := time.Now().UnixNano()
	lo, hi := 2*time.Duration(r0-since), 2*time.Duration(r1-since)
	if w < -time.Second+lo || w > -time.Second+hi {
		t.Errorf("wall offset %v, want -1s + 2×(time since SINCE) in [%v, %v]", w, -time.Second+lo, -time.Second+hi)
	}
	if m < -4*time.Second+lo || m > -4*time.Second+hi {
		t.Errorf("monotonic offset %v, want -4s + 2×(time since SINCE) in [%v, %v]", m, -4*time.Second+lo, -4*time.Second+hi)
	}
	os.WriteFile(path, []byte("0"), 0o644)
	c.reread()
	if w, m := c.WallOffset(), c.MonoOffset(); w != 0 || m != 0 {
		t.Errorf("one number 0 after a rate: offsets %v, %v, want 0", w, m)
	}
}

// The heal of a rate fault as the nemesis writes it (contract.ClockSetting.RateHealed): the
// candidate's monotonic reading goes on from where it was, at real speed, while its wall
// line steps back. The old heal, one number (the offset before the rate), jumped the
// monotonic line by the drift: 5 s forward for this half-speed clock.
func TestClockRateHealKeepsMonotonic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	c := NewClock(path, func(err error) { t.Errorf("clock error: %v", err) })
	write := func(st contract.ClockSetting) {
		t.Helper()
		if err := os.WriteFile(path, []byte(st.String()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c.reread()
	}
	since := time.Now() // the rate ran from 10 s before this until the heal
	slow := contract.ClockSetting{}.WithRate(0.5, since.Add(-10*time.Second).UnixNano())
	write(slow)
	r0 := time.Now()
	m0 := c.Mono()
	write(slow.RateHealed(time.Now().UnixNano()))
	m1 := c.Mono()
	elapsed := time.Since(r0)
	// Between the two readings the line ran at 0.5 until the heal, then at 1.
	if d := m1.Sub(m0); d < 0 || d > elapsed {
		t.Errorf("monotonic reading moved %v across the heal in %v of real time: it jumped", d, elapsed)
	}
	if w := c.WallOffset(); w != 0 {
		t.Errorf("wall offset %v after the heal, want 0 (the drift stepped back)", w)
	}
	// Drift = half the time at rate 0.5: 5 s plus half of since -> heal, which is at most
	// time.Since(since) (not elapsed: the first write, before r0, is part of it).
	if m, most := c.MonoOffset(), time.Since(since)/2; m > -5*time.Second || m < -5*time.Second-most {
		t.Errorf("monotonic offset %v after the heal, want the drift gained, -5s to -5s-%v", m, most)
	}
}

// reread makes c's next reading read the file instead of its cached setting (the cache
// lasts clockRefresh), so a test sees what it just wrote without waiting.
func (c *Clock) reread() {
	c.mu.Lock()
	c.readAt = time.Time{}
	c.mu.Unlock()
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// parse runs every output line through the harness's parser, as the harness would.
func parse(t *testing.T, out string) []history.Event {
	t.Helper()
	var evs []history.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		p, err := contract.ParseLine("c1", sc.Bytes(), history.Now())
		if err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		evs = append(evs, p.Event)
	}
	return evs
}

func TestEmitterConcurrentLinesStayWholeAndOrdered(t *testing.T) {
	var out syncBuf
	em := NewEmitter(&out)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				em.Campaigning(i%2 == 0)
				em.Error(strings.Repeat("x", i))
			}
		}()
	}
	wg.Wait()
	evs := parse(t, out.String())
	if len(evs) != 8*400 {
		t.Fatalf("%d events, want %d", len(evs), 8*400)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].T < evs[i-1].T {
			t.Fatalf("event %d goes back in time", i)
		}
	}
}

// memRecipe is an in-memory election for testing the runtime's loop (not a store).
type memRecipe struct {
	mu       sync.Mutex
	token    int64
	lose     context.CancelCauseFunc
	valid    func() error
	resigns  int
	closed   bool
	campaign chan struct{} // receives one value per Campaign call
}

func (m *memRecipe) Campaign(ctx context.Context) (Term, error) {
	select {
	case m.campaign <- struct{}{}:
	default:
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.token++
	lost, lose := context.WithCancelCause(context.Background())
	m.lose = lose
	return Term{Token: m.token, Lost: lost, Valid: m.valid}, nil
}
func (m *memRecipe) Resign(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resigns++
	return nil
}
func (m *memRecipe) Close() error { m.mu.Lock(); defer m.mu.Unlock(); m.closed = true; return nil }

// memRegistry is a registry of one in-memory recipe called "mem".
func memRegistry(m *memRecipe) Registry {
	return Registry{Spec{Name: "mem", Store: storekinds.Redis, ClockAware: true,
		Timing: func(c contract.Config) Timing { return Timing{TTL: c.LeaseTTL, Retry: 10 * time.Millisecond} },
		New:    func(context.Context, Env) (Recipe, error) { return m, nil }}}
}

func env(url string) func(string) (string, bool) {
	m := map[string]string{contract.EnvNodeID: "c1", contract.EnvStore: "redis", contract.EnvStoreEndpoints: "r:6379",
		contract.EnvResourceURL: url, contract.EnvWriteInterval: "5ms", contract.EnvClockFile: "/nonexistent/clock"}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestRunLeadsWritesStepsDownAndResignsOnSIGTERM(t *testing.T) {
	res := resource.New(resource.Fenced, &syncBuf{})
	srv := httptest.NewServer(res.Handler())
	defer srv.Close()
	m := &memRecipe{campaign: make(chan struct{}, 1)}

	var out, logs syncBuf
	ctx, cancel := context.WithCancel(context.Background())
	elected := make(chan int64, 10)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Recipes: memRegistry(m), Recipe: "mem", Lookup: env(srv.URL), Stdout: &out, Stderr: &logs,
			OnTerm: func(tok int64) { elected <- tok }})
	}()
	// Wait for writes, not for a fixed time: on a loaded machine 30 ms may hold none.
	waitAccepted := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); res.State().Accepted < n; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) { // only ends a hung test
				t.Fatalf("the resource accepted %d writes in a minute, want %d", res.State().Accepted, n)
			}
		}
	}
	<-elected
	waitAccepted(2)
	m.mu.Lock()
	m.lose(errors.New("session gone"))
	m.mu.Unlock()
	if tok := <-elected; tok != 2 {
		t.Fatalf("second term token %d, want 2", tok)
	}
	waitAccepted(res.State().Accepted + 2)
	start := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// ShutdownBound is the runtime's own deadline for a graceful exit; how long a loaded
	// machine takes is no test of it, so the time is only logged (the events below show
	// the resignation was graceful).
	t.Logf("shutdown took %v (the runtime's bound %v)", time.Since(start), ShutdownBound)
	evs := parse(t, out.String())
	var kinds []string
	accepted, unknown, steps := 0, 0, 0
	for _, e := range evs {
		if e.Kind == history.KindStep {
			if e.Name != StepLeaderWork {
				t.Errorf("step %q: the runtime emits only %s", e.Name, StepLeaderWork)
			}
			steps++
			continue
		}
		if e.Kind == history.KindWrite {
			switch e.Result {
			case history.ResultAccepted:
				accepted++
			case history.ResultUnknown:
				unknown++ // cut off by loss or SIGTERM: may or may not have landed
			}
			continue
		}
		k := string(e.Kind)
		if e.Reason != "" {
			k += "(" + e.Reason + ")"
		}
		kinds = append(kinds, k)
	}
	want := "campaigning elected stepped-down(session gone) campaigning elected stepped-down(sigterm)"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("event sequence\n got %s\nwant %s", got, want)
	}
	if steps < accepted {
		t.Errorf("%d leader-work steps for %d accepted writes: every write follows its work gap's step", steps, accepted)
	}
	// Every elected carries call_t: at or after its campaigning, at or before itself.
	var campT int64
	for _, e := range evs {
		switch e.Kind {
		case history.KindCampaigning:
			campT = e.T
		case history.KindElected:
			if e.CallT < campT || e.CallT > e.T {
				t.Fatalf("elected call_t %d outside [campaigning %d, elected %d]", e.CallT, campT, e.T)
			}
		}
	}
	if got := res.State().Accepted; accepted < 4 || got < int64(accepted) || got > int64(accepted+unknown) {
		t.Fatalf("%d accepted + %d unknown writes reported, resource accepted %d", accepted, unknown, got)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.resigns != 2 || !m.closed {
		t.Fatalf("resigns %d (want 2: after loss, on SIGTERM), closed %v", m.resigns, m.closed)
	}
	if !strings.Contains(out.String(), `"clock":"offset-file"`) {
		t.Fatal("clock-aware recipe did not declare it")
	}
}

func TestRunStepsDownWhenFencedOrInvalid(t *testing.T) {
	res := resource.New(resource.Fenced, &syncBuf{})
	srv := httptest.NewServer(res.Handler())
	defer srv.Close()
	// Someone else already wrote with token 100: our token 1 is fenced out.
	res.Decide(resource.WriteRequest{Node: "other", Token: 100, WriteID: "o-1"})
	m := &memRecipe{campaign: make(chan struct{}, 1)}
	var out syncBuf
	ctx, cancel := context.WithCancel(context.Background())
	steps := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Recipes: memRegistry(m), Recipe: "mem", Lookup: env(srv.URL), Stdout: &out, Stderr: &syncBuf{},
			OnStep: func(_ int64, reason string) {
				select { // never block the runner once the test stopped listening
				case steps <- reason:
				default:
				}
			}})
	}()
	if r := <-steps; !strings.HasPrefix(r, "fenced") {
		t.Fatalf("reason %q, want fenced", r)
	}
	m.mu.Lock()
	m.valid = func() error { return errors.New("deadline passed") }
	m.mu.Unlock()
	for r := range steps {
		if r == "deadline passed" {
			break
		}
	}
	cancel()
	<-done
	for _, e := range parse(t, out.String()) {
		if e.Kind == history.KindWrite && e.Result == history.ResultAccepted {
			t.Fatalf("write with token %d accepted below max 100", e.Token)
		}
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	err := Run(context.Background(), Options{Recipes: memRegistry(&memRecipe{}), Recipe: "nope", Lookup: env("http://x:1"), Stdout: &syncBuf{}, Stderr: &syncBuf{}})
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `unknown recipe "nope"`) {
		t.Fatalf("got %v", err)
	}
	m := &memRecipe{}
	lookup := func(k string) (string, bool) {
		if k == contract.EnvStore {
			return "etcd", true
		}
		return env("http://x:1")(k)
	}
	err = Run(context.Background(), Options{Recipes: memRegistry(m), Recipe: "mem", Lookup: lookup, Stdout: &syncBuf{}, Stderr: &syncBuf{}})
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `runs on store "redis", not "etcd"`) {
		t.Fatalf("store mismatch: got %v", err)
	}
}

func TestWriteTimeoutBounds(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{{5 * time.Millisecond, 200 * time.Millisecond},
		{100 * time.Millisecond, 400 * time.Millisecond}, {10 * time.Second, 2 * time.Second}} {
		if got := WriteTimeout(c.in); got != c.want {
			t.Errorf("WriteTimeout(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// A step line is a valid contract event carrying its name, and Env.Step without an
// emitter (tests building an Env by hand) prints nothing and does not panic.
func TestStepEvent(t *testing.T) {
	var out bytes.Buffer
	em := NewEmitter(&out)
	env := Env{StepFn: em.Step}
	env.Step("lock-acquired")
	p, err := contract.ParseLine("c1", bytes.TrimSpace(out.Bytes()), history.Now())
	if err != nil || p.Event.Kind != history.KindStep || p.Event.Name != "lock-acquired" || p.Event.Stamped {
		t.Fatalf("step line %q: %+v %v", out.String(), p.Event, err)
	}
	Env{}.Step("lock-acquired")
	bad := Registry{Spec{Name: "x", Store: "redis", Steps: []string{"lock acquired"}, New: func(context.Context, Env) (Recipe, error) { return nil, nil },
		Timing: func(contract.Config) Timing { return Timing{} }}}
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), `step name "lock acquired"`) {
		t.Fatalf("registry check: %v", err)
	}
}
