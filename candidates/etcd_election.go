package candidates

// etcd-election: concurrency.Session (lease with the configured TTL) + Election.Campaign.
// Token = create revision of our leader key (cluster-global, monotone). Loss = session Done
// or our key deleted. Campaign can return "leader" although the session's lease expired while
// it waited (etcd#19597), so the key is re-read before the term starts.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var etcdElection = runtime.Spec{
	Name: "etcd-election", Store: storekinds.Etcd,
	Summary: "etcd concurrency.Election on a leased session; token = leader key create revision",
	Steps:   []string{"lock-acquired"},
	Timing: func(c contract.Config) runtime.Timing {
		ttl := etcdTTL(c.LeaseTTL)
		return runtime.Timing{TTL: ttl, Renew: ttl / 3,
			// Watch-based handoff; crash: lease expiry + lessor's 500 ms revoke loop + commit + watch.
			HandoffBound: time.Second, FailoverBound: ttl + 2*time.Second}
	},
	New: newEtcdElection,
}

// etcdTTL rounds up to whole seconds: etcd leases have 1 s resolution.
func etcdTTL(d time.Duration) time.Duration {
	return time.Duration(max(1, math.Ceil(d.Seconds()))) * time.Second
}

type etcdRecipe struct {
	env  runtime.Env
	cli  *clientv3.Client
	sess *concurrency.Session
	el   *concurrency.Election
	stop context.CancelFunc // ends the current term's watchers
}

func newEtcdElection(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
	cli, err := clientv3.New(clientv3.Config{
		// No gRPC keepalive below etcd's enforcement minimum (5 s): faster pings get the
		// connection closed with GOAWAY too_many_pings. Lease keepalives detect loss anyway.
		Endpoints: env.Endpoints, DialTimeout: 2 * time.Second,
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", env.Endpoints, err)
	}
	return &etcdRecipe{env: env, cli: cli}, nil
}

func (r *etcdRecipe) Campaign(ctx context.Context) (runtime.Term, error) {
	ttl := int(r.env.Timing.TTL / time.Second)
	sess, err := concurrency.NewSession(r.cli, concurrency.WithTTL(ttl), concurrency.WithContext(ctx))
	if err != nil {
		return runtime.Term{}, fmt.Errorf("new session: %w", err)
	}
	r.sess = sess
	r.el = concurrency.NewElection(sess, "/splitbrain/"+r.env.ElectionName+"/")

	// A session that dies while we wait must end the campaign (Campaign would not notice).
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-sess.Done():
			cancel(errors.New("session lease expired while campaigning"))
		case <-cctx.Done():
		}
	}()
	callT := history.Now() // Campaign puts our key (the token) and waits for it to lead
	if err := r.el.Campaign(cctx, r.env.NodeID); err != nil {
		if c := context.Cause(cctx); c != nil && ctx.Err() == nil {
			err = c
		}
		return runtime.Term{}, fmt.Errorf("campaign: %w", err)
	}
	r.env.Step("lock-acquired") // our key leads; the etcd#19597 re-read follows

	// etcd#19597 guard: our key must still exist, bound to our lease, at the revision we won with.
	resp, err := r.cli.Get(cctx, r.el.Key())
	if err != nil {
		return runtime.Term{}, fmt.Errorf("confirm leader key: %w", err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Lease != int64(sess.Lease()) || resp.Kvs[0].CreateRevision != r.el.Rev() {
		return runtime.Term{}, fmt.Errorf("campaign returned but our key %s is gone or re-created (etcd#19597): not leading", r.el.Key())
	}

	lost, lose := context.WithCancelCause(context.Background())
	// Not derived from ctx: a shutdown must end the term as "sigterm", not as a loss.
	tctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	go func() {
		select {
		case <-sess.Done():
			lose(errors.New("etcd session lease lost"))
		case <-tctx.Done():
			lose(nil)
		}
	}()
	go func() {
		wch := r.cli.Watch(tctx, r.el.Key(), clientv3.WithRev(resp.Header.Revision+1))
		for wr := range wch {
			if err := wr.Err(); err != nil {
				lose(fmt.Errorf("watch on own key failed: %w", err))
				return
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypeDelete {
					lose(errors.New("own leader key deleted"))
					return
				}
			}
		}
	}()
	return runtime.Term{Token: r.el.Rev(), Lost: lost, CallT: callT}, nil
}

func (r *etcdRecipe) Resign(ctx context.Context) error {
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
	var errs []error
	if r.el != nil {
		errs = append(errs, r.el.Resign(ctx))
		r.el = nil
	}
	if r.sess != nil {
		// Revoking the lease removes anything the campaign left behind.
		_, err := r.cli.Revoke(ctx, r.sess.Lease())
		r.sess.Orphan()
		r.sess = nil
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (r *etcdRecipe) Close() error { return r.cli.Close() }
