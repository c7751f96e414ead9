// Command leaderd is the election code of a user's own repository: it campaigns with etcd's
// concurrency.Election, prints the candidate contract's JSON events on stdout, writes to the
// resource while it leads, and resigns on SIGTERM. It is examples/go of splitbrain, held the
// way a user's module would hold its candidate; chaos_test.go assesses it with
// splitbraintest in this module's own `go test -tags chaos ./...`.
//
// Built with -tags broken it is the deliberately broken twin (token_broken.go).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// monotonic is CLOCK_MONOTONIC in ns, the contract's timestamp (Go's time package hides it).
func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

var outMu sync.Mutex

// emit prints one event. "t" is read after taking the lock, so the print order of this
// process's events is their time order, whichever goroutine prints.
func emit(fields map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	if _, ok := fields["t"]; !ok {
		fields["t"] = monotonic()
	}
	b, _ := json.Marshal(fields)
	os.Stdout.Write(append(b, '\n')) // unbuffered: one write per line
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	if def == "" {
		fmt.Fprintf(os.Stderr, "go-candidate: %s is not set\n", name)
		os.Exit(64)
	}
	return def
}

func duration(name, def string) time.Duration {
	d, err := time.ParseDuration(env(name, def))
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-candidate: %s: %v\n", name, err)
		os.Exit(64)
	}
	return d
}

func main() {
	node := env("SPLITBRAIN_NODE_ID", "")
	if s := env("SPLITBRAIN_STORE", ""); s != "etcd" {
		fmt.Fprintf(os.Stderr, "go-candidate: runs on SPLITBRAIN_STORE=etcd only, not %q\n", s)
		os.Exit(64)
	}
	endpoints := strings.Split(env("SPLITBRAIN_STORE_ENDPOINTS", ""), ",")
	resURL := strings.TrimRight(env("SPLITBRAIN_RESOURCE_URL", ""), "/") + "/write"
	ttl := duration("SPLITBRAIN_LEASE_TTL", "2s")
	interval := duration("SPLITBRAIN_WRITE_INTERVAL", "50ms")
	election := env("SPLITBRAIN_ELECTION", "splitbrain")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// The client dials each endpoint by name whenever it (re)connects, so a store node that
	// comes back on another address is found again.
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		emit(map[string]any{"kind": "error", "reason": err.Error()})
		os.Exit(1)
	}
	defer cli.Close()
	httpc := &http.Client{Timeout: min(max(4*interval, 200*time.Millisecond), 2*time.Second)}
	holder := fmt.Sprintf("%s-%x", node, time.Now().UnixNano()) // unique across restarts
	seq := 0

	for ctx.Err() == nil {
		emit(map[string]any{"kind": "campaigning"})
		ttlSec := max(int((ttl+time.Second-1)/time.Second), 2) // whole seconds, etcd's minimum 2
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(ttlSec), concurrency.WithContext(ctx))
		if err != nil {
			if ctx.Err() == nil {
				emit(map[string]any{"kind": "error", "reason": "session: " + err.Error()})
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		el := concurrency.NewElection(sess, "/go-candidate/"+election+"/")
		if err := el.Campaign(ctx, holder); err != nil {
			sess.Close()
			continue
		}
		// Campaign can return after the session expired (etcd#19597): check the key is ours.
		resp, err := cli.Get(ctx, el.Key())
		if err != nil || len(resp.Kvs) == 0 || ctx.Err() != nil {
			// SIGTERM while campaigning ends here too: a term won after it is never announced.
			resign(el, sess)
			continue
		}
		token := tokenFor(el)
		emit(map[string]any{"kind": "elected", "token": token})
		reason := lead(ctx, sess, httpc, resURL, node, holder, token, interval, &seq)
		// The belief ends before the key is deleted: no gap can hide an overlap.
		emit(map[string]any{"kind": "stepped-down", "reason": reason})
		resign(el, sess)
	}
}

// lead writes every interval until SIGTERM, the session ends or the resource fences it.
func lead(ctx context.Context, sess *concurrency.Session, httpc *http.Client, url, node, holder string, token int64, interval time.Duration, seq *int) string {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return "sigterm"
		case <-sess.Done():
			return "session lease lost"
		default:
		}
		*seq++
		id := fmt.Sprintf("%s-%d", holder, *seq)
		body, _ := json.Marshal(map[string]any{"node": node, "token": token, "write_id": id})
		callT := monotonic()
		result := "unknown"
		if resp, err := httpc.Post(url, "application/json", bytes.NewReader(body)); err == nil {
			resp.Body.Close()
			switch {
			case resp.StatusCode == 200:
				result = "accepted"
			case resp.StatusCode >= 400 && resp.StatusCode < 500:
				result = "rejected"
			}
		}
		emit(map[string]any{"kind": "write", "token": token, "write_id": id, "call_t": callT, "result": result})
		if result == "rejected" {
			return "fenced: the resource saw a newer token"
		}
		select {
		case <-ctx.Done():
			return "sigterm"
		case <-sess.Done():
			return "session lease lost"
		case <-tick.C:
		}
	}
}

func resign(el *concurrency.Election, sess *concurrency.Session) {
	rctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := el.Resign(rctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "resign:", err)
	}
	sess.Close()
}
