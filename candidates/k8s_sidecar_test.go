//go:build !core

package candidates

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
)

// fakeHealth is a sidecar's health endpoint as the application sees it: a real HTTP server
// on loopback whose answer the test sets, and which can hang (a paused sidecar).
type fakeHealth struct {
	mu   sync.Mutex
	ans  sidecarAnswer
	hang chan struct{} // non-nil: requests wait for it to close
}

func (f *fakeHealth) set(ans sidecarAnswer) {
	f.mu.Lock()
	f.ans = ans
	f.mu.Unlock()
}

func (f *fakeHealth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	ans, hang := f.ans, f.hang
	f.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
			return
		}
	}
	if !ans.Leader {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(ans)
}

func TestK8sSidecarParams(t *testing.T) {
	p := k8sSidecarParams(contract.Config{LeaseTTL: 2 * time.Second})
	if p.lease != 2*time.Second || p.renewDeadline != 1333*time.Millisecond || p.retry != 266*time.Millisecond || p.poll != 500*time.Millisecond {
		t.Fatalf("TTL 2s: got %+v, want LeaseDuration 2s, RenewDeadline 1.333s, RetryPeriod 266ms, poll 500ms", p)
	}
	p = k8sSidecarParams(contract.Config{LeaseTTL: 1500 * time.Millisecond, RetryInterval: 50 * time.Millisecond, RenewInterval: 100 * time.Millisecond})
	if p.lease != 2*time.Second || p.retry != 100*time.Millisecond || p.poll != 50*time.Millisecond || p.pollTimeout != 200*time.Millisecond {
		t.Fatalf("TTL 1.5s, --retry-interval 50ms, --renew-interval 100ms: got %+v", p)
	}
	if !(p.lease > p.renewDeadline && float64(p.renewDeadline) > 1.2*float64(p.retry)) {
		t.Fatalf("client-go's rule LeaseDuration > RenewDeadline > 1.2 x RetryPeriod broken: %+v", p)
	}
}

// TestK8sSidecarApp drives the application half against a real HTTP endpoint: a term starts
// on a leader answer, writes are held while the sidecar does not answer, the term ends on
// "not leader", and a new term needs a higher token than the last one.
func TestK8sSidecarApp(t *testing.T) {
	h := &fakeHealth{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	steps := make(chan string, 1000)
	env := runtime.Env{Logf: t.Logf, StepFn: func(n string) {
		select {
		case steps <- n:
		default:
		}
	}}
	a := newSidecarApp(ctx, env, sidecarParams{poll: 5 * time.Millisecond, pollTimeout: 200 * time.Millisecond}, srv.URL+"/leader")
	go a.pollLoop()
	// waitFailed waits until the application has seen a poll go unanswered.
	waitFailed := func() {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			a.mu.Lock()
			failed := !a.last.answered && a.last.err != nil
			a.mu.Unlock()
			if failed {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("no unanswered poll within 30s")
			}
		}
	}
	waitStep := func(name string) {
		t.Helper()
		for {
			select {
			case s := <-steps:
				if s == name {
					return
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no %s step within 30s", name)
			}
		}
	}
	campaign := func() chan runtime.Term {
		out := make(chan runtime.Term, 1)
		go func() {
			term, err := a.Campaign(ctx)
			if err != nil {
				t.Errorf("Campaign: %v", err)
			}
			out <- term
		}()
		return out
	}

	got := campaign()
	h.set(sidecarAnswer{Leader: true, Token: 3, CallT: 42})
	term := <-got
	if term.Token != 3 || term.CallT != 42 {
		t.Fatalf("term = token %d call_t %d, want the sidecar's token 3 and call_t 42", term.Token, term.CallT)
	}
	if err := term.Valid(); err != nil {
		t.Fatalf("Valid while the sidecar says leader: %v", err)
	}

	// A hanging sidecar (paused): the write is held until an answer comes, then goes ahead.
	hang := make(chan struct{})
	h.mu.Lock()
	h.hang = hang
	h.mu.Unlock()
	waitFailed()
	valid := make(chan error, 1)
	go func() { valid <- term.Valid() }()
	h.mu.Lock()
	h.hang = nil
	h.mu.Unlock()
	close(hang)
	if err := <-valid; err != nil {
		t.Fatalf("Valid after the sidecar answered leader again: %v", err)
	}
	if term.Lost.Err() != nil {
		t.Fatalf("a missing answer ended the term: %v", context.Cause(term.Lost))
	}

	// "not leader" ends the term, and Valid says why.
	h.set(sidecarAnswer{})
	<-term.Lost.Done()
	if err := term.Valid(); err == nil || !strings.Contains(err.Error(), "not leader") {
		t.Fatalf("Valid after the sidecar said not leader: %v", err)
	}
	a.Resign(ctx)

	// The same token again is not a new acquisition; a higher one is.
	got = campaign()
	h.set(sidecarAnswer{Leader: true, Token: 3})
	waitStep(StepPollLeader)
	waitStep(StepPollLeader)
	h.set(sidecarAnswer{Leader: true, Token: 5})
	if term := <-got; term.Token != 5 {
		t.Fatalf("second term has token %d, want 5 (token 3 was the last term's)", term.Token)
	}
}
