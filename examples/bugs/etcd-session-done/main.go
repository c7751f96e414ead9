// Command etcd-session-done: an etcd leader (concurrency.Election) that learns of a lost
// lease only from concurrency.Session's Done channel.
//
// Reference: https://github.com/etcd-io/etcd/issues/5571 ("concurrency.Session fails if there
// is reconnection to server": Done never closed while the server was unreachable; the fix
// closes the keepalive channel once no keepalive was answered for a lease duration, counted
// from the last answer); https://github.com/cilium/cilium/pull/28834 (review: "the delay
// between server-side expiration and client-side detection" cannot be removed by Done alone).
//
// Mechanism: the leader is cut off from etcd. The server expires the lease a TTL after the
// last keepalive it received, deletes the leader key and the next waiter's watch fires at
// once. The client closes Done only a TTL after the last keepalive *answer* it got, and
// looks only every 500 ms, so the old leader writes on after its successor was elected.
// This project measured it first with its etcd-election recipe (docs/candidates.md, "Loss
// detection"); here it is with the real client library alone.
//
// Fix (R14 of docs/candidates.md, and how lease clients that need safety work): keep an own
// deadline counted from the *send* time of the last answered keepalive plus the TTL the
// server granted, and stop leading when it passes, before the server can expire the lease.
// Built with -tags buggy the candidate trusts Done alone.
//
//	CGO_ENABLED=0 go build -tags buggy -o /tmp/etcd-session-done ./examples/bugs/etcd-session-done
package main

import (
	"context"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

func main() {
	env := candidate.Load("etcd")
	ctx, stop := candidate.Signals()
	defer stop()
	cli, err := clientv3.New(clientv3.Config{Endpoints: env.Endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		candidate.Error(err.Error())
		os.Exit(1)
	}
	defer cli.Close()
	w := candidate.NewWriter(env)
	ttlSec := max(int((env.TTL+time.Second-1)/time.Second), 2) // whole seconds, etcd's minimum 2
	for ctx.Err() == nil {
		candidate.Campaigning()
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(ttlSec), concurrency.WithContext(ctx))
		if err != nil {
			candidate.Error("session: " + err.Error())
			candidate.Sleep(ctx, env.Retry)
			continue
		}
		el := concurrency.NewElection(sess, "/corpus-session-done/"+env.Election+"/")
		callT := candidate.Monotonic()
		// Waiting ends with the session: a waiter whose lease expired starts over.
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-sess.Done():
			case <-cctx.Done():
			}
			cancel()
		}()
		err = el.Campaign(cctx, env.Node)
		cancel()
		if err != nil || ctx.Err() != nil {
			resign(el, sess)
			continue
		}
		// Campaign can return after the session expired (etcd#19597): check the key is ours.
		resp, err := cli.Get(ctx, el.Key())
		if err != nil || len(resp.Kvs) == 0 {
			resign(el, sess)
			continue
		}
		token := resp.Kvs[0].CreateRevision
		// One keepalive now, so that the deadline starts from a known send time.
		dl := &candidate.Deadline{}
		sent := time.Now()
		pctx, cancel := context.WithTimeout(ctx, env.TTL/4)
		r, err := cli.KeepAliveOnce(pctx, sess.Lease())
		cancel()
		if err != nil || r.TTL <= 0 {
			resign(el, sess)
			continue
		}
		dl.Extend(sent, time.Duration(r.TTL)*time.Second*99/100)
		lost := func() string {
			select {
			case <-sess.Done():
				return "etcd session done"
			default:
			}
			if buggy {
				return "" // BUG: Done closes a TTL after the last answer, after the server's expiry
			}
			return dl.Lost()
		}
		stopProbe := func() {}
		if !buggy {
			// The fix: a keepalive of our own every TTL/4; its send time plus the granted TTL,
			// minus 1 % for the clock rate, is a point before which the server cannot expire.
			stopProbe = candidate.Every(ctx, env.TTL/4, func(ctx context.Context) {
				sent := time.Now()
				pctx, cancel := context.WithTimeout(ctx, env.TTL/4)
				defer cancel()
				if r, err := cli.KeepAliveOnce(pctx, sess.Lease()); err == nil && r.TTL > 0 {
					dl.Extend(sent, time.Duration(r.TTL)*time.Second*99/100)
				}
			})
		}
		candidate.Elected(token, callT)
		reason := w.Lead(ctx, token, lost)
		stopProbe()
		candidate.SteppedDown(reason)
		resign(el, sess)
	}
	os.Exit(0)
}

// resign deletes the key (if the session still can) and ends the session.
func resign(el *concurrency.Election, sess *concurrency.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	el.Resign(ctx)
	sess.Close()
}
