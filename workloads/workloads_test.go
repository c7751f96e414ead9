package workloads

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRegistry(t *testing.T) {
	if got := strings.Join(Names(), ","); got != "handoff,steady" {
		t.Fatalf("Names = %s", got)
	}
	for _, n := range Names() {
		w, err := New(n, Options{TTL: time.Second})
		if err != nil || w.Name() != n || w.Describe() == "" {
			t.Fatalf("New(%s) = %v, %v", n, w, err)
		}
	}
	_, err := New("chaos-monkey", Options{})
	if err == nil || !strings.Contains(err.Error(), "handoff, steady") {
		t.Fatalf("unknown workload error %v must list the valid ones", err)
	}
}

func TestHandoffOptions(t *testing.T) {
	w, _ := New("handoff", Options{TTL: 2 * time.Second})
	if h := w.(*handoff); h.every != 0 || h.writes != HandoffWrites || h.pause != time.Second {
		t.Fatalf("defaults %+v, want event-paced on the %d-th write with a 1s pause", h, HandoffWrites)
	}
	if d := w.Describe(); !strings.Contains(d, "5th accepted write") {
		t.Errorf("Describe %q does not say the handoffs are paced by writes", d)
	}
	w, _ = New("handoff", Options{HandoffEvery: 4 * time.Second})
	if d := w.Describe(); !strings.Contains(d, "every 4s") {
		t.Errorf("Describe %q does not give the time table", d)
	}
	if _, err := New("handoff", Options{HandoffEvery: time.Second, HandoffPause: 2 * time.Second}); err == nil {
		t.Fatal("pause longer than period accepted")
	}
	if _, err := New("handoff", Options{HandoffPause: 2 * time.Second}); err != nil {
		t.Fatalf("an event-paced handoff has no period for the pause to exceed: %v", err)
	}
}

// fakeEnv models candidates as processes that exit on SIGTERM unless stubborn.
type fakeEnv struct {
	mu       sync.Mutex
	leader   string
	running  map[string]bool
	stubborn bool
	log      []string
	asked    []int // WaitLeaderWrites's n, per call
}

// runUntil runs w until env's log has n entries, then ends its phase; it returns Run's error.
func runUntil(t *testing.T, w Workload, env *fakeEnv, n int) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, env) }()
	deadline := time.After(time.Minute) // only ends a hung test
	for {
		env.mu.Lock()
		got := len(env.log)
		env.mu.Unlock()
		if got >= n {
			break
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("Run returned early (%v) with log %v", err, env.log)
		case <-deadline:
			cancel()
			t.Fatalf("no %d actions within a minute: %v", n, env.log)
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	return <-done
}

func (f *fakeEnv) Leader() (string, int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader, 1, f.leader != "" && f.running[f.leader]
}

// WaitLeaderWrites: the fake leader has written enough once it runs; asked records n.
func (f *fakeEnv) WaitLeaderWrites(ctx context.Context, n int) (string, int64, error) {
	for {
		f.mu.Lock()
		f.asked = append(f.asked, n)
		if f.leader != "" && f.running[f.leader] {
			defer f.mu.Unlock()
			return f.leader, 1, nil
		}
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return "", 0, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (f *fakeEnv) Signal(_ context.Context, node, sig, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, fmt.Sprintf("%s %s %s", sig, node, reason))
	if sig == "SIGKILL" || !f.stubborn {
		f.running[node] = false
	}
	return nil
}

func (f *fakeEnv) WaitExit(ctx context.Context, node string) error {
	for {
		f.mu.Lock()
		r := f.running[node]
		f.mu.Unlock()
		if !r {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (f *fakeEnv) Restart(_ context.Context, node string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running[node] {
		return errors.New("already running")
	}
	f.running[node] = true
	f.log = append(f.log, "restart "+node)
	// The next leader is someone else, as after a real handoff.
	if f.leader == "c1" {
		f.leader = "c2"
	} else {
		f.leader = "c1"
	}
	return nil
}

func (f *fakeEnv) Logf(string, ...any) {}

func TestHandoffCycles(t *testing.T) {
	for _, every := range []time.Duration{0, 5 * time.Millisecond} {
		env := &fakeEnv{leader: "c1", running: map[string]bool{"c1": true, "c2": true}}
		w := &handoff{every: every, writes: 4, pause: time.Millisecond, grace: time.Second}
		if err := runUntil(t, w, env, 4); err != nil {
			t.Fatal(err)
		}
		env.mu.Lock()
		if env.log[0] != "SIGTERM c1 handoff" || env.log[1] != "restart c1" || env.log[2] != "SIGTERM c2 handoff" {
			t.Fatalf("every %v: log %v", every, env.log)
		}
		for n, r := range env.running {
			if !r {
				t.Errorf("every %v: %s left down after the workload ended", every, n)
			}
		}
		switch {
		case every == 0 && (len(env.asked) == 0 || env.asked[0] != 4):
			t.Errorf("event-paced: asked for writes %v, want 4", env.asked)
		case every > 0 && len(env.asked) > 0:
			t.Errorf("time-tabled: waited for writes %v", env.asked)
		}
		env.mu.Unlock()
	}
}

func TestHandoffNoLeaderSkips(t *testing.T) {
	env := &fakeEnv{running: map[string]bool{"c1": true}}
	w := &handoff{every: 5 * time.Millisecond, pause: time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
	defer cancel()
	if err := w.Run(ctx, env); err != nil {
		t.Fatal(err)
	}
	if len(env.log) != 0 {
		t.Fatalf("acted without a leader: %v", env.log)
	}
}

func TestSteadyWaits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := (steady{}).Run(ctx, nil); err != nil || time.Since(start) < 10*time.Millisecond {
		t.Fatal("steady returned early")
	}
}

func TestHandoffKillsStubbornLeader(t *testing.T) {
	env := &fakeEnv{leader: "c1", running: map[string]bool{"c1": true, "c2": true}, stubborn: true}
	w := &handoff{writes: 1, pause: time.Millisecond, grace: 20 * time.Millisecond}
	runUntil(t, w, env, 3)
	env.mu.Lock()
	defer env.mu.Unlock()
	if env.log[0] != "SIGTERM c1 handoff" || env.log[1] != "SIGKILL c1 handoff" || env.log[2] != "restart c1" {
		t.Fatalf("log %v", env.log)
	}
}
