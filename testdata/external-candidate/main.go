// Command external-candidate speaks the splitbrain candidate contract v1 (docs/candidates.md)
// without the project's runtime, the way a user's own election code would: it reads the
// SPLITBRAIN_* environment, campaigns with etcd's concurrency.Election, prints JSON events on
// stdout, writes to the resource while it leads, and resigns on SIGTERM. It ignores the clock
// offset file (and does not declare it), so clock faults are "not applicable" to it.
//
// Build: go build -o external-candidate ./testdata/external-candidate
package main

import (
	"bytes"
	"context"
	"encoding/json"
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

var outMu sync.Mutex

// monotonic is the host's CLOCK_MONOTONIC in ns: the contract's timestamp.
func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func emit(fields map[string]any) {
	if _, ok := fields["t"]; !ok {
		fields["t"] = monotonic()
	}
	b, _ := json.Marshal(fields)
	outMu.Lock()
	os.Stdout.Write(append(b, '\n'))
	outMu.Unlock()
}

func mustEnv(name string) string {
	v := os.Getenv(name)
	if v == "" {
		fmt.Fprintf(os.Stderr, "external-candidate: %s is not set\n", name)
		os.Exit(2)
	}
	return v
}

func main() {
	node := mustEnv("SPLITBRAIN_NODE_ID")
	if s := mustEnv("SPLITBRAIN_STORE"); s != "etcd" {
		fmt.Fprintf(os.Stderr, "external-candidate: only etcd is supported, not %q\n", s)
		os.Exit(2)
	}
	endpoints := strings.Split(mustEnv("SPLITBRAIN_STORE_ENDPOINTS"), ",")
	resURL := strings.TrimRight(mustEnv("SPLITBRAIN_RESOURCE_URL"), "/")
	ttl, interval := 2*time.Second, 50*time.Millisecond
	if v := os.Getenv("SPLITBRAIN_LEASE_TTL"); v != "" {
		ttl, _ = time.ParseDuration(v)
	}
	if v := os.Getenv("SPLITBRAIN_WRITE_INTERVAL"); v != "" {
		interval, _ = time.ParseDuration(v)
	}
	election := os.Getenv("SPLITBRAIN_ELECTION")
	if election == "" {
		election = "splitbrain"
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		emit(map[string]any{"kind": "error", "reason": err.Error()})
		os.Exit(1)
	}
	defer cli.Close()
	httpc := &http.Client{Timeout: 500 * time.Millisecond}
	seq := 0
	start := time.Now().UnixNano()

	for ctx.Err() == nil {
		emit(map[string]any{"kind": "campaigning"})
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int((ttl+time.Second-1)/time.Second)), concurrency.WithContext(ctx))
		if err != nil {
			emit(map[string]any{"kind": "error", "reason": "session: " + err.Error()})
			time.Sleep(200 * time.Millisecond)
			continue
		}
		el := concurrency.NewElection(sess, "/external/"+election+"/")
		if err := el.Campaign(ctx, node); err != nil {
			sess.Close()
			continue
		}
		token := el.Rev()
		emit(map[string]any{"kind": "elected", "token": token})
		reason := "session lost"
		tick := time.NewTicker(interval)
	lead:
		for {
			seq++
			id := fmt.Sprintf("%s-%x-%d", node, start, seq)
			body, _ := json.Marshal(map[string]any{"node": node, "token": token, "write_id": id})
			callT := monotonic()
			result := "unknown"
			if resp, err := httpc.Post(resURL+"/write", "application/json", bytes.NewReader(body)); err == nil {
				resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					result = "accepted"
				case 409:
					result = "rejected"
				}
			}
			emit(map[string]any{"kind": "write", "token": token, "write_id": id, "call_t": callT, "t": monotonic(), "result": result})
			if result == "rejected" {
				reason = "fenced"
				break
			}
			select {
			case <-ctx.Done():
				reason = "sigterm"
				break lead
			case <-sess.Done():
				break lead
			case <-tick.C:
			}
		}
		tick.Stop()
		if ctx.Err() != nil {
			reason = "sigterm" // the session ends with ctx too; the shutdown is the cause
		}
		emit(map[string]any{"kind": "stepped-down", "reason": reason})
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		el.Resign(rctx)
		cancel()
		sess.Close()
	}
}
