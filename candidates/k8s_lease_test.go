package candidates

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
)

// The TTL mapping gives client-go a configuration it accepts (RunOrDie would panic
// otherwise) with whole-second lease durations, and names valid Lease names.
func TestK8sLeaseTiming(t *testing.T) {
	for _, ttl := range []time.Duration{500 * time.Millisecond, 2 * time.Second, 2500 * time.Millisecond, 15 * time.Second} {
		tm := k8sLeaseTiming(contract.Config{LeaseTTL: ttl})
		if tm.TTL%time.Second != 0 || tm.TTL < ttl {
			t.Errorf("TTL %v: lease duration %v, want whole seconds >= the TTL", ttl, tm.TTL)
		}
		cfg := leaderelection.LeaderElectionConfig{LeaseDuration: tm.TTL, RenewDeadline: k8sRenewDeadline(tm.TTL), RetryPeriod: tm.Retry,
			Lock: &recordingLock{Interface: &resourcelock.LeaseLock{LockConfig: resourcelock.ResourceLockConfig{Identity: "c1_x"}}}, Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}}}
		if _, err := leaderelection.NewLeaderElector(cfg); err != nil {
			t.Errorf("TTL %v: client-go refuses %+v: %v", ttl, tm, err)
		}
		if tm.FailoverBound <= tm.TTL || tm.HandoffBound >= tm.FailoverBound {
			t.Errorf("TTL %v: implausible bounds %+v", ttl, tm)
		}
	}
	if got := k8sObjectName("My_Election.1"); got != "my-election-1" {
		t.Errorf("object name %q", got)
	}
}
