package candidates

// k8s-lease: client-go's tools/leaderelection (RunOrDie) on a coordination.k8s.io/v1 Lease,
// ReleaseOnCancel. Token = the Lease's leaseTransitions + 1 as written by the write that
// made this candidate the holder. Loss = OnStoppedLeading (no successful renew within
// RenewDeadline). client-go judges a lease's age on the local monotonic clock (when the
// record last changed), so the clock-offset file moves nothing: clock faults do not apply.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
)

var k8sLease = runtime.Spec{
	Name: "k8s-lease", Store: contract.StoreKubernetes,
	Summary: "client-go leaderelection.RunOrDie on a Lease (ReleaseOnCancel); token = leaseTransitions + 1 at acquisition",
	Timing:  k8sLeaseTiming,
	New:     newK8sLease,
}

// k8sLeaseTiming maps the run's TTL onto client-go's three durations in the ratio of
// Kubernetes' own defaults (15 s / 10 s / 2 s): LeaseDuration = TTL rounded up to whole
// seconds (the Lease stores leaseDurationSeconds), RenewDeadline = 2/3 of it, RetryPeriod =
// 2/15 of it (SPLITBRAIN_RETRY_INTERVAL overrides; it is also the renew period). Waits are
// jittered by up to JitterFactor (1.2) × RetryPeriod.
func k8sLeaseTiming(c contract.Config) runtime.Timing {
	lease := time.Duration(max(1, math.Ceil(c.LeaseTTL.Seconds()))) * time.Second
	retry := lease * 2 / 15
	if c.RetryInterval > 0 {
		retry = c.RetryInterval
	}
	period := retry + time.Duration(float64(retry)*leaderelection.JitterFactor) // longest wait between tries
	return runtime.Timing{TTL: lease, Renew: retry, Retry: retry,
		// Released lease (holder ""): taken on a waiter's next try.
		HandoffBound: period + 500*time.Millisecond,
		// Crash: a waiter sees the last renew up to one period late, waits LeaseDuration from
		// then on its own clock, and tries again up to one period later.
		FailoverBound: lease + 2*period + 500*time.Millisecond}
}

func k8sRenewDeadline(lease time.Duration) time.Duration { return lease * 2 / 3 }

type k8sLeaseRecipe struct {
	env  runtime.Env
	cs   *kubernetes.Clientset
	name string

	resigning atomic.Bool
	cancel    context.CancelFunc
	done      chan struct{}
}

func newK8sLease(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
	cs, err := k8sClient(env)
	if err != nil {
		return nil, err
	}
	return &k8sLeaseRecipe{env: env, cs: cs, name: k8sObjectName(env.ElectionName)}, nil
}

// k8sClient reads the kubeconfig the harness gave this candidate.
func k8sClient(env runtime.Env) (*kubernetes.Clientset, error) {
	if env.Kubeconfig == "" {
		return nil, fmt.Errorf("%s is empty: the kubernetes store's candidates get a kubeconfig from the harness (run with --store kubernetes)", contract.EnvStoreKubeconfig)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", env.Kubeconfig, err)
	}
	rc.QPS, rc.Burst = 100, 200 // client-side throttling would add latency the recipe does not ask for
	rc.Timeout = env.Timing.TTL // bounds calls made without a deadline (release uses RenewDeadline)
	return kubernetes.NewForConfig(rc)
}

// k8sObjectName turns the election name into a DNS-1123 name (Lease and ConfigMap names).
func k8sObjectName(s string) string {
	return strings.Trim(strings.NewReplacer("_", "-", ".", "-").Replace(strings.ToLower(s)), "-")
}

func (r *k8sLeaseRecipe) Campaign(ctx context.Context) (runtime.Term, error) {
	// A fresh identity per campaign, as controllers use hostname_uuid per process: a candidate
	// whose term ended never renews a record it may still be named in, so every term starts
	// with an acquisition, which raises leaseTransitions.
	var rnd [4]byte
	rand.Read(rnd[:])
	lock := &recordingLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: r.name, Namespace: contract.KubeNamespace},
		Client:     r.cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: r.env.NodeID + "_" + hex.EncodeToString(rnd[:])},
	}}
	lost, lose := context.WithCancelCause(context.Background())
	elected := make(chan struct{}, 1)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.resigning.Store(false)
	r.cancel, r.done = cancel, done
	cfg := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   r.env.Timing.TTL,
		RenewDeadline:   k8sRenewDeadline(r.env.Timing.TTL),
		RetryPeriod:     r.env.Timing.Retry,
		ReleaseOnCancel: true,
		Name:            r.name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { elected <- struct{}{} },
			OnStoppedLeading: func() {
				if r.resigning.Load() {
					lose(nil)
					return
				}
				lose(errors.New("client-go OnStoppedLeading: no successful renew within RenewDeadline"))
			},
		},
	}
	go func() {
		defer close(done)
		leaderelection.RunOrDie(runCtx, cfg)
	}()
	select {
	case <-elected:
		tr, callT, ok := lock.acquired()
		if !ok {
			return runtime.Term{}, errors.New("client-go reports leading but no acquiring write of ours was seen")
		}
		return runtime.Term{Token: int64(tr) + 1, Lost: lost, CallT: callT}, nil
	case <-ctx.Done():
		r.resigning.Store(true)
		cancel()
		<-done
		return runtime.Term{}, ctx.Err()
	case <-done:
		return runtime.Term{}, errors.New("leader election ended before leading")
	}
}

// Resign cancels the elector; ReleaseOnCancel makes it write an empty holder before
// OnStoppedLeading, so a waiter takes over on its next try.
func (r *k8sLeaseRecipe) Resign(ctx context.Context) error {
	if r.cancel == nil {
		return nil
	}
	r.resigning.Store(true)
	r.cancel()
	r.cancel = nil
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("release of lease %s: %w", r.name, ctx.Err())
	}
}

func (r *k8sLeaseRecipe) Close() error { return nil }

// recordingLock is the Lease lock, remembering the write that made this identity the holder:
// its leaseTransitions is the token and its send time the term's call_t. client-go writes
// leaseTransitions = previous + 1 whenever a new identity takes the record, and every
// write is a compare-and-swap on the Lease's resourceVersion, so values only grow along the
// chain of acquisitions (docs/candidates.md, k8s-lease).
type recordingLock struct {
	resourcelock.Interface
	mu          sync.Mutex
	have        bool
	transitions int
	callT       int64
}

func (l *recordingLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, rec, l.Interface.Create)
}

func (l *recordingLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, rec, l.Interface.Update)
}

func (l *recordingLock) write(ctx context.Context, rec resourcelock.LeaderElectionRecord, f func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	t := history.Now()
	err := f(ctx, rec)
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.mu.Lock()
		if !l.have {
			l.have, l.transitions, l.callT = true, rec.LeaderTransitions, t
		}
		l.mu.Unlock()
	}
	return err
}

func (l *recordingLock) acquired() (transitions int, callT int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.transitions, l.callT, l.have
}
