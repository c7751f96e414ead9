// Command etcd-lock-unfenced: an etcd concurrency.Mutex holder that protects its writes with
// the lock alone, without a fencing token.
//
// Reference: Jepsen's analysis of etcd 3.4.3, https://jepsen.io/analyses/etcd-3.4.3 ("Locks
// ... did not, and can not, guarantee mutual exclusion in asynchronous networks": a holder
// paused past its lease keeps acting after the next holder got the lock), and etcd's answer,
// https://etcd.io/blog/2020/jepsen-343-results/ (use the lock key's revision as a fencing
// token checked by the protected resource).
//
// Mechanism: the holder checks its session before every write, as Jepsen's clients did, and
// is then paused for 3xTTL. etcd expires its lease and grants the lock to the next waiter.
// When the paused holder resumes, the write it had already decided on (and the ones until its
// client notices the dead session, up to 500 ms) reach the resource after the new holder's.
// Without a token the resource cannot tell the two holders apart: each sends the same value.
//
// Fix (etcd's): send the create revision of the own lock key as the token; the fenced
// resource refuses the old holder's writes. Built with -tags buggy every holder sends token 1
// (no fencing token: the same stamp from every holder).
//
//	CGO_ENABLED=0 go build -tags buggy -o /tmp/etcd-lock-unfenced ./examples/bugs/etcd-lock-unfenced
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
		m := concurrency.NewMutex(sess, "/corpus-lock/"+env.Election)
		callT := candidate.Monotonic()
		cctx, cancel := context.WithCancel(ctx)
		go func() { // a waiter whose session ended starts over
			select {
			case <-sess.Done():
			case <-cctx.Done():
			}
			cancel()
		}()
		err = m.Lock(cctx) // returns ErrSessionExpired if the own key went while waiting
		cancel()
		if err != nil || ctx.Err() != nil {
			unlock(m, sess)
			continue
		}
		resp, err := cli.Get(ctx, m.Key())
		if err != nil || len(resp.Kvs) == 0 {
			unlock(m, sess)
			continue
		}
		token := resp.Kvs[0].CreateRevision // the fix: the lock key's revision fences
		if buggy {
			token = 1 // BUG: no fencing token; every holder looks the same to the resource
		}
		candidate.Elected(token, callT)
		reason := w.Lead(ctx, token, func() string {
			select {
			case <-sess.Done():
				return "etcd session done"
			default:
				return ""
			}
		})
		candidate.SteppedDown(reason)
		unlock(m, sess)
	}
	os.Exit(0)
}

func unlock(m *concurrency.Mutex, sess *concurrency.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	m.Unlock(ctx)
	sess.Close()
}
