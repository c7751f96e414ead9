// Command slow-redis-candidate is a deliberately wrong candidate for TestCandidateCheckCutLeader:
// a Redis lease with go-redis's default timeouts (5 s reads, 3 retries) and no local
// deadline, so a leader learns that it lost its lease only when a renewal call fails. Cut
// off from Redis, it believes on for far longer than the TTL; `candidate check --cut-leader`
// must say so (leader-outlives-cut).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"
)

func now() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

var mu sync.Mutex

func emit(f map[string]any) {
	mu.Lock()
	defer mu.Unlock()
	f["t"] = now()
	b, _ := json.Marshal(f)
	os.Stdout.Write(append(b, '\n'))
}

// acquire takes the lease and draws the token in one step.
var acquire = redis.NewScript(`if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end return 0`)

func main() {
	ttl, _ := time.ParseDuration(os.Getenv("SPLITBRAIN_LEASE_TTL"))
	if ttl <= 0 {
		ttl = 2 * time.Second
	}
	node, res := os.Getenv("SPLITBRAIN_NODE_ID"), os.Getenv("SPLITBRAIN_RESOURCE_URL")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cli := redis.NewClient(&redis.Options{Addr: os.Getenv("SPLITBRAIN_STORE_ENDPOINTS")}) // the defaults: the mistake
	me := fmt.Sprintf("%s-%d", node, time.Now().UnixNano())
	seq := 0
	for ctx.Err() == nil {
		emit(map[string]any{"kind": "campaigning"})
		var token int64
		for ctx.Err() == nil {
			callT := now()
			n, err := acquire.Run(ctx, cli, []string{"slow:lease", "slow:token"}, me, ttl.Milliseconds()).Int64()
			if err == nil && n > 0 {
				token = n
				emit(map[string]any{"kind": "elected", "token": token, "call_t": callT})
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if token == 0 {
			break
		}
		lost := make(chan string, 1)
		go func() { // renew every TTL/3; only a failed call ends the term
			for ctx.Err() == nil {
				time.Sleep(ttl / 3)
				ok, err := cli.PExpire(ctx, "slow:lease", ttl).Result()
				if err != nil || !ok {
					lost <- fmt.Sprintf("renew failed: %v", err)
					return
				}
			}
		}()
		reason := ""
		for reason == "" {
			select {
			case <-ctx.Done():
				reason = "sigterm"
				continue
			case why := <-lost:
				reason = why
				continue
			default:
			}
			seq++
			id := fmt.Sprintf("%s-%d", me, seq)
			body, _ := json.Marshal(map[string]any{"node": node, "token": token, "write_id": id})
			callT, result := now(), "unknown"
			if resp, err := (&http.Client{Timeout: time.Second}).Post(res+"/write", "application/json", bytes.NewReader(body)); err == nil {
				resp.Body.Close()
				result = map[bool]string{true: "accepted", false: "rejected"}[resp.StatusCode == 200]
			}
			emit(map[string]any{"kind": "write", "token": token, "write_id": id, "call_t": callT, "result": result})
			if result == "rejected" {
				reason = "fenced"
			}
			time.Sleep(50 * time.Millisecond)
		}
		emit(map[string]any{"kind": "stepped-down", "reason": reason})
		cli.Del(context.Background(), "slow:lease")
	}
}
