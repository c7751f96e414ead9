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
	if h := w.(*handoff); h.every != 6*time.Second || h.pause != time.Second {
		t.Fatalf("defaults %+v", h)
	}
	w, _ = New("handoff", Options{TTL: 100 * time.Millisecond})
	if h := w.(*handoff); h.every != handoffMinEvery {
		t.Fatalf("minimum period not applied: %+v", h)
	}
	if _, err := New("handoff", Options{HandoffEvery: time.Second, HandoffPause: 2 * time.Second}); err == nil {
		t.Fatal("pause longer than period accepted")
	}
}

// fakeEnv models candidates as processes that exit on SIGTERM unless stubborn.
type fakeEnv struct {
	mu       sync.Mutex
	leader   string
	running  map[string]bool
	stubborn bool
	log      []string
}

func (f *fakeEnv) Leader() (string, int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader, 1, f.leader != "" && f.running[f.leader]
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
	env := &fakeEnv{leader: "c1", running: map[string]bool{"c1": true, "c2": true}}
	w := &handoff{every: 20 * time.Millisecond, pause: 5 * time.Millisecond, grace: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	if err := w.Run(ctx, env); err != nil {
		t.Fatal(err)
	}
	env.mu.Lock()
	defer env.mu.Unlock()
	if len(env.log) < 4 || env.log[0] != "SIGTERM c1 handoff" || env.log[1] != "restart c1" || env.log[2] != "SIGTERM c2 handoff" {
		t.Fatalf("log %v", env.log)
	}
	for n, r := range env.running {
		if !r {
			t.Errorf("%s left down after the workload ended", n)
		}
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
	w := &handoff{every: 10 * time.Millisecond, pause: time.Millisecond, grace: 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	w.Run(ctx, env)
	env.mu.Lock()
	defer env.mu.Unlock()
	if len(env.log) < 3 || env.log[0] != "SIGTERM c1 handoff" || env.log[1] != "SIGKILL c1 handoff" || env.log[2] != "restart c1" {
		t.Fatalf("log %v", env.log)
	}
}
