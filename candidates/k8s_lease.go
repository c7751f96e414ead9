//go:build !core

package candidates

// k8s-lease: client-go's tools/leaderelection (RunOrDie) on a coordination.k8s.io/v1 Lease.
// Token = the Lease's leaseTransitions + 1 as written by the write that made this candidate
// the holder. Loss: the leader works only while it can prove its lease on its own monotonic
// clock (k8sLeaseParams: the last successful renew's send time + the proof window, a waiter
// cannot take over before that), whatever client-go's OnStoppedLeading says and whenever it
// says it; OnStoppedLeading (no renew within RenewDeadline) ends the term too. Release: a
// compare-and-swap on a fresh read that finds this campaign still the holder (client-go's
// ReleaseOnCancel decides on its cached record and can empty a successor's Lease). client-go
// judges a lease's age on the local monotonic clock (when the record last changed), so the
// clock-offset file moves nothing: clock faults do not apply.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var k8sLease = runtime.Spec{
	Name: "k8s-lease", Store: storekinds.Kubernetes,
	Summary: "client-go leaderelection.RunOrDie on a Lease; leader works only while its last renew proves the lease; token = leaseTransitions + 1 at acquisition",
	Timing:  k8sLeaseTiming,
	New:     newK8sLease,
}

const (
	// k8sObservation: a waiter sees a renewal only when the record's JSON changes, and the
	// JSON carries renewTime in whole seconds (client-go converts the Lease to a
	// LeaderElectionRecord whose metav1.Time marshals as RFC 3339 seconds). Every renew
	// stamped within the second of the first one the waiter saw looks unchanged to it.
	k8sObservation = time.Second
	// k8sProofSlack covers scheduling between the proof check and the write, and the clock
	// rate error of the stamps over one lease (the candidates share the host's clocks).
	k8sProofSlack = 50 * time.Millisecond
	// k8sMinProof is the shortest proof window allowed: several renew tries must fit in it,
	// or a single slow API call ends the term.
	k8sMinProof = 500 * time.Millisecond
)

// k8sParams are client-go's three durations and the leader's proof window for a run.
type k8sParams struct {
	lease, renewDeadline, retry time.Duration
	// proof: leader work may start only while less than this has passed (monotonic) since
	// the send time of the last successful renew.
	proof time.Duration
	// margin: what the proof keeps back from the earliest takeover for the work after the
	// check (leader work + write timeout + slack).
	margin time.Duration
}

// k8sLeaseParams derives the timing from the run's configuration.
//
// When can a waiter take over? It takes the Lease once it saw the record unchanged for
// LeaseDuration on its own clock, counted from when it first read the current JSON. Let the
// leader stamp (renewTime, taken before the request is sent) its last successful renew B at
// w_B, and let A be the first write with the same JSON, stamped w_A in the same wall second:
// w_B - w_A < 1 s. The waiter read that JSON after A was written, so after w_A, and it takes
// over no earlier than w_A + LeaseDuration > w_B + LeaseDuration - 1 s. (A waiter that read
// an older JSON saw a change later, so it takes over later still.)
//
// The leader checks the proof before each piece of work and then works (LeaderWork) and
// writes (bounded by the write timeout), so the last work it starts must begin margin =
// LeaderWork + write timeout + slack before that: proof = LeaseDuration - 1 s - margin from
// w_B, measured on the leader's monotonic clock. LeaseDuration is the TTL in whole seconds
// (the Lease stores leaseDurationSeconds), raised until the proof is at least k8sMinProof.
// RetryPeriod (also the renew period) is a quarter of the proof, at most Kubernetes' own
// 2/15 of the lease, so three renew tries fit in one proof; RenewDeadline is the rest of the
// proof, so client-go's own verdict comes at about the time the proof runs out. At TTL 2 s and
// the default 50 ms write interval: margin 300 ms, LeaseDuration 2 s, proof 700 ms,
// RetryPeriod 175 ms, RenewDeadline 525 ms.
func k8sLeaseParams(c contract.Config) k8sParams {
	margin := c.LeaderWork + runtime.WriteTimeout(c.WriteInterval) + k8sProofSlack
	lease := time.Duration(max(1, math.Ceil(c.LeaseTTL.Seconds()))) * time.Second
	if need := k8sObservation + margin + k8sMinProof; lease < need {
		lease = time.Duration(math.Ceil(need.Seconds())) * time.Second
	}
	proof := lease - k8sObservation - margin
	retry := min(proof/4, lease*2/15).Truncate(time.Millisecond)
	if c.RetryInterval > 0 {
		retry = c.RetryInterval
	}
	// client-go requires LeaseDuration > RenewDeadline > 1.2 x RetryPeriod; a long
	// --retry-interval pushes RenewDeadline past the proof (the proof still decides).
	deadline := max(proof-retry, time.Duration(float64(retry)*leaderelection.JitterFactor)+time.Millisecond)
	return k8sParams{lease: lease, renewDeadline: deadline, retry: retry, proof: proof, margin: margin}
}

// k8sLeaseTiming: the bounds follow from client-go's waits, which are jittered by up to
// JitterFactor (1.2) x RetryPeriod.
func k8sLeaseTiming(c contract.Config) runtime.Timing {
	p := k8sLeaseParams(c)
	period := p.retry + time.Duration(float64(p.retry)*leaderelection.JitterFactor) // longest wait between tries
	return runtime.Timing{TTL: p.lease, Renew: p.retry, Retry: p.retry,
		// Released lease (holder ""): taken on a waiter's next try.
		HandoffBound: period + 500*time.Millisecond,
		// Crash: a waiter sees the last renew up to one period late, waits LeaseDuration from
		// then on its own clock, and tries again up to one period later.
		FailoverBound: p.lease + 2*period + 500*time.Millisecond}
}

type k8sLeaseRecipe struct {
	env    runtime.Env
	params k8sParams
	cs     *kubernetes.Clientset
	name   string

	cancel context.CancelFunc
	done   chan struct{}
}

func newK8sLease(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
	p := k8sLeaseParams(env.Config)
	if p.renewDeadline >= p.lease {
		return nil, fmt.Errorf("%s %s is too long for LeaseDuration %s: client-go needs LeaseDuration > RenewDeadline > 1.2 x RetryPeriod (use at most %s)",
			contract.EnvRetryInterval, p.retry, p.lease, (time.Duration(float64(p.lease)/leaderelection.JitterFactor) - time.Millisecond).Truncate(time.Millisecond))
	}
	cs, err := k8sClient(env)
	if err != nil {
		return nil, err
	}
	env.Logf("k8s-lease: LeaseDuration %s, RenewDeadline %s, RetryPeriod %s; leader work only within %s of a renew's send (LeaseDuration - %s observation granularity - %s margin)",
		p.lease, p.renewDeadline, p.retry, p.proof, k8sObservation, p.margin)
	return &k8sLeaseRecipe{env: env, params: p, cs: cs, name: k8sObjectName(env.ElectionName)}, nil
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
	lease := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: r.name, Namespace: contract.KubeNamespace},
		Client:     r.cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: r.env.NodeID + "_" + hex.EncodeToString(rnd[:])},
	}
	lost, lose := context.WithCancelCause(context.Background())
	proof := newK8sProof(r.params, lose)
	lock := &recordingLock{Interface: lease, renewed: proof.renewed}
	elected := make(chan struct{}, 1)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.cancel, r.done = cancel, done
	cfg := leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: r.params.lease,
		RenewDeadline: r.params.renewDeadline,
		RetryPeriod:   r.params.retry,
		// Not ReleaseOnCancel: client-go's release() runs before OnStoppedLeading (waiting up
		// to RenewDeadline on an unreachable API server) and decides on its cached record, so
		// a deposed leader empties its successor's Lease. The recipe releases itself below.
		Name: r.name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { elected <- struct{}{} },
			OnStoppedLeading: func() {
				if runCtx.Err() != nil {
					lose(nil) // our own Resign or shutdown
					return
				}
				lose(errors.New("client-go OnStoppedLeading: no successful renew within RenewDeadline"))
			},
		},
	}
	go func() {
		defer close(done)
		leaderelection.RunOrDie(runCtx, cfg)
		proof.stop()
		// The elector is gone, so nothing else uses the lock: give the Lease back if a fresh
		// read still names this campaign (also after a lost term: a record nobody else took).
		rctx, rcancel := context.WithTimeout(context.Background(), r.params.renewDeadline)
		defer rcancel()
		if err := k8sRelease(rctx, lease); err != nil {
			r.env.Logf("k8s-lease: release of %s: %v", r.name, err)
		}
	}()
	select {
	case <-elected:
		tr, callT, ok := lock.acquired()
		if !ok {
			return runtime.Term{}, errors.New("client-go reports leading but no acquiring write of ours was seen")
		}
		return runtime.Term{Token: int64(tr) + 1, Lost: lost, Valid: proof.valid, CallT: callT}, nil
	case <-ctx.Done():
		cancel()
		<-done
		return runtime.Term{}, ctx.Err()
	case <-done:
		return runtime.Term{}, errors.New("leader election ended before leading")
	}
}

// k8sRelease empties the Lease (holder "", leaseDurationSeconds 1, as client-go's release
// writes) only if a fresh read names this lock's identity as the holder; the update carries
// that read's resourceVersion, so it fails if anyone wrote the Lease since.
func k8sRelease(ctx context.Context, lock *resourcelock.LeaseLock) error {
	rec, _, err := lock.Get(ctx)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if rec.HolderIdentity != lock.Identity() {
		return nil
	}
	now := metav1.NewTime(time.Now())
	return lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now})
}

// Resign stops the elector, which then releases the Lease (see Campaign), so a waiter takes
// over on its next try.
func (r *k8sLeaseRecipe) Resign(ctx context.Context) error {
	if r.cancel == nil {
		return nil
	}
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

// k8sProof is a term's proof of its lease: until = the send time of the last successful
// renew (monotonic) + the proof window. Once the proof ran out the term is over for good,
// even if a renew succeeds later: the leader may have stopped proving while a waiter counted.
type k8sProof struct {
	window time.Duration
	expire func(error)

	mu    sync.Mutex
	until time.Time
	since time.Time // the send time behind until
	dead  error
	timer *time.Timer
}

func newK8sProof(p k8sParams, expire context.CancelCauseFunc) *k8sProof {
	return &k8sProof{window: p.proof, expire: expire}
}

// renewed records a successful acquire or renew whose request was sent at sent.
func (p *k8sProof) renewed(sent time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead != nil || !sent.Add(p.window).After(p.until) {
		return
	}
	p.until, p.since = sent.Add(p.window), sent
	if p.timer == nil {
		p.timer = time.AfterFunc(time.Until(p.until), p.check)
	} else {
		p.timer.Reset(time.Until(p.until))
	}
}

// check runs when the proof may have run out; a renew in the meantime re-armed the timer.
func (p *k8sProof) check() {
	if err := p.valid(); err != nil {
		p.expire(err)
	}
}

// valid is the term's Valid: nil while the proof holds, on the monotonic clock.
func (p *k8sProof) valid() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead == nil && !time.Now().Before(p.until) {
		if p.until.IsZero() {
			p.dead = errors.New("lease not proven: no successful acquire or renew of ours was seen")
		} else {
			p.dead = fmt.Errorf("lease no longer proven: the last successful renew was sent %s ago, and the proof lasts %s after one",
				time.Since(p.since).Round(time.Millisecond), p.window)
		}
	}
	return p.dead
}

func (p *k8sProof) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
	}
}

// recordingLock is the Lease lock, remembering the write that made this identity the holder
// (its leaseTransitions is the token and its send time the term's call_t) and telling the
// proof about every successful write naming this identity. client-go writes
// leaseTransitions = previous + 1 whenever a new identity takes the record, and every write
// is a compare-and-swap on the Lease's resourceVersion, so values only grow along the chain
// of acquisitions (docs/candidates.md, k8s-lease).
type recordingLock struct {
	resourcelock.Interface
	renewed func(sent time.Time) // nil: not told

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
	t, sent := history.Now(), time.Now()
	err := f(ctx, rec)
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.mu.Lock()
		if !l.have {
			l.have, l.transitions, l.callT = true, rec.LeaderTransitions, t
		}
		l.mu.Unlock()
		if l.renewed != nil {
			l.renewed(proofStart(sent, rec.RenewTime.Time))
		}
	}
	return err
}

// proofStart is the earlier of the send time and the renewTime stamp client-go took before
// it (waiters bucket the record by that stamp's second), kept on sent's monotonic reading.
func proofStart(sent, stamp time.Time) time.Time {
	if !stamp.IsZero() && stamp.Before(sent) {
		return sent.Add(-sent.Sub(stamp))
	}
	return sent
}

func (l *recordingLock) acquired() (transitions int, callT int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.transitions, l.callT, l.have
}
