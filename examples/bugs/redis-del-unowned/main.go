// Command redis-del-unowned: a Redis lock (SET NX PX with a fencing counter) whose release
// is a plain DEL, without checking that the key still holds its own value.
//
// Reference: https://github.com/redis/redis-py/issues/415 ("bug in Lock's release()
// function": a lock that expired and was taken by a second client is deleted by the first
// client's release, and a third client gets it); the same in Go:
// https://github.com/rfyiamcool/go_redis_lock/issues/1 and
// https://github.com/nexspence/nexspence/issues/223; the Redis documentation's lock pattern
// (https://redis.io/docs/latest/develop/clients/patterns/distributed-locks/) names it:
// "using just DEL is not safe as a client may remove another client's lock".
//
// Mechanism: the leader steps down (here on SIGTERM, a graceful handoff), stops renewing and
// finishes a last unit of work before it releases, the deferred release of the reports. That
// work is held up past the TTL (a pause of 2xTTL started on the candidate's "releasing" step;
// SPLITBRAIN_LEADER_WORK, 1 s in the rows, is the work's length, so the pause lands inside
// it), the key expires and the next candidate takes it. Then the old leader's DEL removes the
// successor's key, so a third candidate acquires it while the successor still leads (until
// its next renewal finds the key gone). With an unfenced resource the successor's writes land
// after the third leader's. The old leader has stepped down before the pause, so no write of
// its own is late: the violation is the release alone.
//
// Fix (redis-py's, and the documentation's): release with a compare-and-delete script.
// Built with -tags buggy the candidate releases with DEL. go-redis v9, the client the
// project's redis recipes use.
//
//	CGO_ENABLED=0 go build -tags buggy -o /tmp/redis-del-unowned ./examples/bugs/redis-del-unowned
package main

import (
	"context"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

// acquire takes the key if it is free and draws the fencing token in the same script.
//
// Two guards against a Redis server without persistence that restarted and forgot
// everything, a loss that is another bug than this entry's (docs/findings.md section 2,
// "Counters restart at 1"; the redlock-restart entry is the same loss for Redlock), so both
// variants carry them and differ only in the release:
//   - the server's memory age: the first script call on a server that has no born key
//     stamps it with the server's clock; until the server is TTL + 1 s old nobody acquires
//     (-1), because a lock it forgot may still be trusted by its holder (the delayed restart
//     the Redis documentation requires, counted on the server itself);
//   - a counter the server no longer has (INCR answers 1) starts at the server's clock in
//     milliseconds, above any token of its earlier life, so no token is handed out twice.
//
// The project cannot skew a Redis server's clock, so TIME only moves forward here.
var acquire = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[3], string.format('%d', now), 'NX')
if now - tonumber(redis.call('GET', KEYS[3])) < tonumber(ARGV[3]) then
  return -1
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local n = redis.call('INCR', KEYS[2])
  if n == 1 then
    n = now
    redis.call('SET', KEYS[2], string.format('%d', n))
  end
  return n
end
return 0`)

// renew extends the key only while it holds our value.
var renew = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// release deletes the key only while it holds our value (the fix).
var release = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

func main() {
	env := candidate.Load("redis")
	ctx, stop := candidate.Signals()
	defer stop()
	timeout := max(env.Renew/2, 100*time.Millisecond)
	rdb := redis.NewClient(&redis.Options{Addr: env.Endpoints[0], ContextTimeoutEnabled: true,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: -1})
	key, fence, born := "corpus-lock:"+env.Election, "corpus-fence:"+env.Election, "corpus-server-born"
	ttlMs := env.TTL.Milliseconds()
	work, _ := time.ParseDuration(os.Getenv("SPLITBRAIN_LEADER_WORK")) // last work before the release
	w := candidate.NewWriter(env)
	for ctx.Err() == nil {
		candidate.Campaigning()
		me := env.Node + "-" + candidate.Unique()
		var token, callT int64
		var sent time.Time
		for token == 0 && ctx.Err() == nil {
			sent, callT = time.Now(), candidate.Monotonic()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			n, err := acquire.Run(cctx, rdb, []string{key, fence, born}, me, ttlMs, ttlMs+1000).Int64()
			cancel()
			if err == nil && n > 0 {
				token = n
				break
			}
			candidate.Sleep(ctx, env.Retry)
		}
		if token == 0 {
			break // SIGTERM while waiting
		}
		dl := &candidate.Deadline{}
		dl.Extend(sent, env.TTL*99/100) // counted from the send, on the monotonic clock (R14)
		if ctx.Err() == nil {
			candidate.Elected(token, callT)
			stopRenew := candidate.Every(ctx, env.Renew, func(ctx context.Context) {
				sent := time.Now()
				cctx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				n, err := renew.Run(cctx, rdb, []string{key}, me, ttlMs).Int64()
				switch {
				case err == nil && n == 1:
					dl.Extend(sent, env.TTL*99/100)
				case err == nil:
					dl.Lose("renew refused: the key is no longer ours")
				}
			})
			reason := w.Lead(ctx, token, dl.Lost)
			stopRenew()
			candidate.SteppedDown(reason)
		}
		candidate.Step("releasing")
		time.Sleep(max(work, 0)) // not cut short by SIGTERM: the work finishes, then the release
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if buggy {
			rdb.Del(cctx, key) // BUG: deletes the key whoever holds it now
		} else {
			release.Run(cctx, rdb, []string{key}, me)
		}
		cancel()
	}
	os.Exit(0)
}
