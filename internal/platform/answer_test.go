package platform

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// TestSilentEngineCallFails: an engine that takes a request and never answers (the dockerd
// deadlock that held a CI run inside NetworkList) makes the call fail with a timeout instead of
// hanging until the caller's own, much later, deadline.
func TestSilentEngineCallFails(t *testing.T) {
	fakeEngine(t, func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/_ping"):
			w.Header().Set("Api-Version", "1.41")
			w.Write([]byte("OK"))
		case strings.HasSuffix(r.URL.Path, "/version"):
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"Version":"20.10.24","ApiVersion":"1.41"}`))
		default:
			<-release // the deadlock: the request is read, no answer ever comes
		}
	})
	setAnswerTimeout(t, 300*time.Millisecond)

	eng, err := Connect(context.Background())
	if err != nil {
		t.Fatalf("connect to the fake engine: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = eng.Client().NetworkList(ctx, client.NetworkListOptions{})
	if err == nil {
		t.Fatal("NetworkList on a silent engine returned no error")
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		t.Fatalf("the call ran into the caller's deadline instead of the engine answer timeout: %v", err)
	}
	if !strings.Contains(err.Error(), "timeout awaiting response headers") {
		t.Errorf("error %q does not say the engine did not answer", err)
	}
}

// TestEngineDialsDefaultSocket: without DOCKER_HOST the client with our transport still dials
// the engine's default socket (a transport of our own once lost it: "lookup
// /var/run/docker.sock: no such host").
func TestEngineDialsDefaultSocket(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	old := defaultEngineHost
	defaultEngineHost = "unix://" + sock
	t.Cleanup(func() { defaultEngineHost = old })
	_, err = Connect(context.Background())
	if err == nil {
		t.Fatal("connect to a socket nobody listens on succeeded")
	}
	if !strings.Contains(err.Error(), sock) {
		t.Errorf("the client did not dial the default socket %s: %v", sock, err)
	}
}

// TestConnectWaitsForABusyEngine: Connect waits for a slow first answer as long as any call
// may (the answer timeout), and an engine that takes the request but stays silent is named as
// such, not as "no engine": on a loaded machine the fixed 10 s ping once failed three tests.
func TestConnectWaitsForABusyEngine(t *testing.T) {
	answer := make(chan struct{}) // closed: /version answers
	got := make(chan struct{}, 8) // a /version request came in
	fakeEngine(t, func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			w.Header().Set("Api-Version", "1.41")
			w.Write([]byte("OK"))
			return
		}
		got <- struct{}{}
		select {
		case <-answer:
		case <-release:
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"Version":"20.10.24","ApiVersion":"1.41"}`))
	})
	setAnswerTimeout(t, 300*time.Millisecond)

	_, err := Connect(context.Background())
	if err == nil {
		t.Fatal("Connect to a silent engine succeeded")
	}
	if !strings.Contains(err.Error(), "did not answer within") || strings.Contains(err.Error(), "no Docker engine answers") {
		t.Errorf("a silent engine is reported as %q; want it named as taking the request without answering", err)
	}

	// A busy engine that answers once it can: Connect waits for it (the answer timeout is
	// raised so that only the engine's own answer ends the wait).
	setAnswerTimeout(t, time.Minute)
	for len(got) > 0 {
		<-got // the silent round's request
	}
	go func() {
		<-got // the answer comes only after Connect's request is in: busy, not absent
		close(answer)
	}()
	eng, err := Connect(context.Background())
	if err != nil {
		t.Fatalf("Connect to an engine that answers late: %v", err)
	}
	eng.Close()
}

// fakeEngine serves handle on a fresh unix socket as DOCKER_HOST until the test ends; release
// is closed before the server, so a handler blocked on it returns.
func fakeEngine(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, release <-chan struct{})) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(w, r, release) })}
	go srv.Serve(ln)
	t.Cleanup(func() { close(release); srv.Close() })
	t.Setenv("DOCKER_HOST", "unix://"+sock)
}

// setAnswerTimeout sets the engine answer timeout for the rest of the test.
func setAnswerTimeout(t *testing.T, d time.Duration) {
	old := engineAnswerTimeout
	engineAnswerTimeout = d
	t.Cleanup(func() { engineAnswerTimeout = old })
}
