//go:build !core

package candidates

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
)

// The TTL mapping gives client-go a configuration it accepts (RunOrDie would panic
// otherwise) with whole-second lease durations, and a proof window that ends, with the work
// after the last check, before the earliest time a waiter can take over (LeaseDuration minus
// the one-second observation granularity).
func TestK8sLeaseTiming(t *testing.T) {
	for _, c := range []contract.Config{
		{LeaseTTL: 500 * time.Millisecond, WriteInterval: 50 * time.Millisecond, LeaderWork: 50 * time.Millisecond},
		{LeaseTTL: 2 * time.Second, WriteInterval: 50 * time.Millisecond, LeaderWork: 50 * time.Millisecond},
		{LeaseTTL: 2 * time.Second, WriteInterval: 20 * time.Millisecond},
		{LeaseTTL: 2500 * time.Millisecond, WriteInterval: 50 * time.Millisecond, LeaderWork: 50 * time.Millisecond},
		{LeaseTTL: 2 * time.Second, WriteInterval: 500 * time.Millisecond, LeaderWork: 500 * time.Millisecond},
		{LeaseTTL: 15 * time.Second, WriteInterval: 50 * time.Millisecond, LeaderWork: 50 * time.Millisecond},
		{LeaseTTL: 2 * time.Second, WriteInterval: 50 * time.Millisecond, RetryInterval: 300 * time.Millisecond},
	} {
		tm, p := k8sLeaseTiming(c), k8sLeaseParams(c)
		if tm.TTL%time.Second != 0 || tm.TTL < c.LeaseTTL || tm.TTL != p.lease {
			t.Errorf("%+v: lease duration %v, want whole seconds >= the TTL", c, tm.TTL)
		}
		if p.proof < k8sMinProof {
			t.Errorf("%+v: proof %v shorter than %v", c, p.proof, k8sMinProof)
		}
		// The last write a proven leader starts lands before the earliest takeover.
		if last, takeover := p.proof+c.LeaderWork+runtime.WriteTimeout(c.WriteInterval), p.lease-k8sObservation; last >= takeover {
			t.Errorf("%+v: last proven write may land %v after the renew, a waiter may take over from %v", c, last, takeover)
		}
		if c.RetryInterval == 0 && 3*p.retry > p.proof {
			t.Errorf("%+v: RetryPeriod %v: fewer than three renew tries fit in the proof %v", c, p.retry, p.proof)
		}
		cfg := leaderelection.LeaderElectionConfig{LeaseDuration: p.lease, RenewDeadline: p.renewDeadline, RetryPeriod: p.retry,
			Lock: &recordingLock{Interface: &resourcelock.LeaseLock{LockConfig: resourcelock.ResourceLockConfig{Identity: "c1_x"}}}, Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}}}
		if _, err := leaderelection.NewLeaderElector(cfg); err != nil {
			t.Errorf("%+v: client-go refuses %+v: %v", c, p, err)
		}
		if tm.FailoverBound <= tm.TTL || tm.HandoffBound >= tm.FailoverBound {
			t.Errorf("%+v: implausible bounds %+v", c, tm)
		}
	}
	// TTL 2 s at the default interval: the figures the docs state.
	p := k8sLeaseParams(contract.Config{LeaseTTL: 2 * time.Second, WriteInterval: 50 * time.Millisecond, LeaderWork: 50 * time.Millisecond})
	if p.lease != 2*time.Second || p.proof != 700*time.Millisecond || p.retry != 175*time.Millisecond || p.renewDeadline != 525*time.Millisecond {
		t.Errorf("TTL 2s: %+v, want lease 2s, proof 700ms, retry 175ms, renew deadline 525ms (docs/candidates.md)", p)
	}
	if got := k8sObjectName("My_Election.1"); got != "my-election-1" {
		t.Errorf("object name %q", got)
	}
}

// A retry interval client-go cannot accept is refused with the flag's name, not a panic.
func TestK8sLeaseRefusesLongRetry(t *testing.T) {
	c := contract.Config{LeaseTTL: 2 * time.Second, WriteInterval: 50 * time.Millisecond, RetryInterval: 1900 * time.Millisecond}
	_, err := newK8sLease(context.Background(), runtime.Env{Config: c, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), contract.EnvRetryInterval) {
		t.Fatalf("err = %v, want one naming %s", err, contract.EnvRetryInterval)
	}
}

// The proof lasts its window from the renew's send time, a later renew extends it, and once
// it ran out it stays out (and says so through the term's loss cause) even if a renew
// succeeds afterwards.
func TestK8sProof(t *testing.T) {
	lost, lose := context.WithCancelCause(context.Background())
	p := newK8sProof(k8sParams{proof: time.Hour}, lose)
	if err := p.valid(); err == nil {
		t.Fatal("valid before any renew")
	}
	p = newK8sProof(k8sParams{proof: time.Hour}, lose)
	now := time.Now()
	p.renewed(now.Add(-time.Hour - time.Second)) // already out
	p.renewed(now)                               // in again before anyone looked
	if err := p.valid(); err != nil {
		t.Fatalf("renewed just now, window 1h: %v", err)
	}
	p.renewed(now.Add(-2 * time.Hour)) // an older send never shortens the proof
	if err := p.valid(); err != nil {
		t.Fatalf("after an older renew: %v", err)
	}
	p.stop()

	p = newK8sProof(k8sParams{proof: 30 * time.Millisecond}, lose)
	p.renewed(time.Now())
	select {
	case <-lost.Done():
	case <-time.After(time.Minute):
		t.Fatal("the proof's timer never ended the term")
	}
	if err := context.Cause(lost); err == nil || !strings.Contains(err.Error(), "no longer proven") {
		t.Fatalf("cause %v", err)
	}
	p.renewed(time.Now())
	if err := p.valid(); err == nil {
		t.Fatal("a renew after the proof ran out revived it")
	}
}

// The proof counts from renewTime (stamped before the request) when that is earlier than the
// wrapper's own send time, on the monotonic clock.
func TestK8sProofStart(t *testing.T) {
	sent := time.Now()
	stamp := sent.Add(-40 * time.Millisecond)
	if got := proofStart(sent, stamp); got.Sub(stamp) != 0 || got == got.Round(0) {
		t.Errorf("proofStart = %v, want %v with a monotonic reading", got, stamp)
	}
	if got := proofStart(sent, sent.Add(time.Second)); !got.Equal(sent) {
		t.Errorf("a later stamp moved the start: %v", got)
	}
	if got := proofStart(sent, time.Time{}); !got.Equal(sent) {
		t.Errorf("no stamp: %v", got)
	}
}
