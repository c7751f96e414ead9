package candidates

// etcd-stonith: STONITH on etcd-election. The lock is etcd-election's (leased session,
// Campaign, etcd#19597 re-read); the safety comes from the fence device instead of a token
// the resource checks. A winner reads the previous holder from the store (a key outside
// the election prefix, written only by a holder of the leader key), powers it off through
// the run's fence device (SPLITBRAIN_FENCE_URL) and waits for the device's answer "off";
// only then does it record itself as holder and announce elected. It trusts that answer on
// purpose and never reads GET /status back: against a fence-lying device it acts while the
// previous holder still runs, which is what the fence-lying matrix row shows (a candidate
// that reads the state back survives it; docs/candidates.md "The fence device"). A fence that fails or times
// out ends the campaign without a term: it resigns and tries again, so it never writes
// while the previous holder may be alive. The previous holder is powered on again after
// its successor took over (Pacemaker's reboot action), so it rejoins as a follower. A
// holder that resigns gracefully (SIGTERM) clears the record: nobody fences a clean exit.
//
// etcd-stonith-proceed is the negative control: a fence that fails or times out is logged
// and the winner acts anyway, as a cluster with fencing "best effort" does.
//
// etcd-stonith-readback is the recommended design: after the answer "off" the winner reads
// the power state back (GET /status) until it says off, as fence agents do after a power-off
// (fence_docker, fence_ipmilan: "get power status" until the wanted state, within a power
// timeout), and only then acts. A device that acknowledges before the power is off (the
// fence-lying fault) costs it time, not safety.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var etcdStonith = stonithSpec("etcd-stonith", false, false,
	"etcd election; the winner powers the previous holder off through the fence device and acts on the device's answer \"off\" (trusted, not read back; no token needed at the resource)")

var etcdStonithProceed = stonithSpec("etcd-stonith-proceed", true, false,
	"etcd-stonith, but a fence that fails or times out is ignored and the winner acts anyway (negative control)")

var etcdStonithReadback = stonithSpec("etcd-stonith-readback", false, true,
	"etcd-stonith, but after the answer \"off\" the winner reads the power state back (GET /status) until it is off, as fence agents do, before it acts")

func stonithSpec(name string, proceed, readBack bool, summary string) runtime.Spec {
	return runtime.Spec{
		Name: name, Store: storekinds.Etcd, Negative: proceed, Summary: summary,
		Steps: stonithSteps(proceed), Fences: true,
		Timing: func(c contract.Config) runtime.Timing {
			ttl := etcdTTL(c.LeaseTTL)
			// etcd-election's bounds plus the power-off: a SIGKILL and the engine's
			// confirmation, well under a second when the device is healthy.
			return runtime.Timing{TTL: ttl, Renew: ttl / 3, HandoffBound: 2 * time.Second, FailoverBound: ttl + 3*time.Second}
		},
		New: func(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
			if env.FenceURL == "" {
				return nil, fmt.Errorf("%s needs the run's fence device: %s is not set (docs/candidates.md, \"The fence device\")", name, contract.EnvFenceURL)
			}
			inner, err := newEtcdElection(ctx, env)
			if err != nil {
				return nil, err
			}
			ttl := etcdTTL(env.LeaseTTL)
			return &etcdStonithRecipe{etcdRecipe: inner.(*etcdRecipe), proceed: proceed, readBack: readBack,
				holderKey: "/splitbrain-fence/" + env.ElectionName + "/holder",
				fence:     &http.Client{Timeout: stonithFenceTimeout(ttl)}}, nil
		},
	}
}

// stonithSteps: the fence steps come only when a previous holder is fenced, which the
// negative control's single-election test never reaches; it declares and prints none.
func stonithSteps(proceed bool) []string {
	if proceed {
		return []string{"lock-acquired"}
	}
	return []string{"lock-acquired", "fence-sent", "fenced"}
}

// stonithFenceTimeout is how long a winner waits for the confirmed power-off: two TTLs,
// far beyond a healthy device's answer (a kill and the engine's confirmation).
func stonithFenceTimeout(ttl time.Duration) time.Duration { return 2 * ttl }

type etcdStonithRecipe struct {
	*etcdRecipe
	proceed   bool
	readBack  bool
	holderKey string
	fence     *http.Client
}

func (r *etcdStonithRecipe) Campaign(ctx context.Context) (runtime.Term, error) {
	term, err := r.etcdRecipe.Campaign(ctx)
	if err != nil {
		return term, err
	}
	me := r.env.NodeID
	resp, err := r.cli.Get(ctx, r.holderKey)
	if err != nil {
		return runtime.Term{}, fmt.Errorf("read the previous holder: %w", err)
	}
	prev := ""
	if len(resp.Kvs) == 1 {
		prev = string(resp.Kvs[0].Value)
	}
	fenced := false
	if prev != "" && prev != me {
		r.step("fence-sent")
		if err := r.powerOff(ctx, prev); err != nil {
			if !r.proceed {
				return runtime.Term{}, fmt.Errorf("fence of the previous holder %s failed, not acting: %w", prev, err)
			}
			r.env.Logf("fence of the previous holder %s failed, acting anyway (negative control): %v", prev, err)
		} else {
			fenced = true
			r.step("fenced")
		}
	}
	// Record ourselves as holder only while our key still leads: a winner whose session
	// ran out during a slow fence must not claim it.
	tx, err := r.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(r.el.Key()), "=", r.el.Rev())).
		Then(clientv3.OpPut(r.holderKey, me)).Commit()
	if err != nil {
		return runtime.Term{}, fmt.Errorf("record holder: %w", err)
	}
	if !tx.Succeeded {
		return runtime.Term{}, errors.New("our leader key is gone after fencing: not leading")
	}
	if fenced {
		// Power the fenced node on again so it rejoins as a follower, without waiting: a
		// container start takes seconds on a loaded machine and is no part of the failover;
		// a failure costs availability only.
		go func() {
			octx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := r.fenceCall(octx, http.MethodPost, "on", prev, "on"); err != nil {
				r.env.Logf("power on %s after fencing it: %v", prev, err)
			}
		}()
	}
	return term, nil
}

func (r *etcdStonithRecipe) step(name string) {
	if !r.proceed {
		r.env.Step(name)
	}
}

// powerOff asks the device to power node off and returns once it answered "off" (and,
// reading back, once its status said off too).
func (r *etcdStonithRecipe) powerOff(ctx context.Context, node string) error {
	if err := r.fenceCall(ctx, http.MethodPost, "off", node, "off"); err != nil || !r.readBack {
		return err
	}
	// The power timeout: as long as the winner waits for the answer itself.
	ctx, cancel := context.WithTimeout(ctx, r.fence.Timeout)
	defer cancel()
	for {
		err := r.fenceCall(ctx, http.MethodGet, "status", node, "off")
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the device answered off, but %s's power status did not read off within %v: %w", node, r.fence.Timeout, err)
		case <-time.After(statusPollInterval):
		}
	}
}

// statusPollInterval is the read-back's poll period (fence agents poll about once a second;
// the device answers a status in milliseconds; each poll is two history events).
const statusPollInterval = 250 * time.Millisecond

func (r *etcdStonithRecipe) fenceCall(ctx context.Context, method, action, node, want string) error {
	req, err := http.NewRequestWithContext(ctx, method, r.env.FenceURL+"/"+action+"/"+url.PathEscape(node), nil)
	if err != nil {
		return err
	}
	resp, err := r.fence.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var reply struct {
		Power string `json:"power"`
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &reply)
	if resp.StatusCode != http.StatusOK || reply.Power != want {
		return fmt.Errorf("fence device: %s %s: %s %s", action, node, resp.Status, reply.Error)
	}
	return nil
}

// Resign clears the holder record while our key still leads (a graceful exit needs no
// fence), then resigns as etcd-election does.
func (r *etcdStonithRecipe) Resign(ctx context.Context) error {
	var errs []error
	if r.el != nil && r.sess != nil && r.el.Rev() > 0 {
		_, err := r.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(r.el.Key()), "=", r.el.Rev()),
				clientv3.Compare(clientv3.Value(r.holderKey), "=", r.env.NodeID)).
			Then(clientv3.OpDelete(r.holderKey)).Commit()
		errs = append(errs, err)
	}
	errs = append(errs, r.etcdRecipe.Resign(ctx))
	return errors.Join(errs...)
}
