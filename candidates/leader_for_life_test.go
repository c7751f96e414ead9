//go:build !core

package candidates

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
)

// The schedule is operator-lib's (first wait, doubling to 16x) scaled to the run, and the
// bounds cover the longest jittered wait plus the node's and the garbage collector's part.
func TestLeaderForLifeTiming(t *testing.T) {
	tm := leaderForLifeTiming(contract.Config{LeaseTTL: 2 * time.Second})
	if tm.Retry != 250*time.Millisecond {
		t.Errorf("first wait %v, want TTL/8 = 250ms", tm.Retry)
	}
	if want := lflNodeAllowance + 4800*time.Millisecond + 500*time.Millisecond; tm.FailoverBound != want || tm.HandoffBound != want {
		t.Errorf("bounds %+v, want %v (allowance + 1.2 x 16 x 250ms + 0.5s)", tm, want)
	}
	if tm := leaderForLifeTiming(contract.Config{LeaseTTL: 2 * time.Second, RetryInterval: time.Second}); tm.Retry != time.Second || tm.FailoverBound < 19*time.Second {
		t.Errorf("SPLITBRAIN_RETRY_INTERVAL=1s (operator-lib's own 1s..16s): %+v", tm)
	}
}

func TestLeaderForLifeToken(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "l", ResourceVersion: "4711"}}
	if tok, err := lflToken(cm); err != nil || tok != 4711 {
		t.Errorf("token %d, %v", tok, err)
	}
	for _, rv := range []string{"", "0", "-3", "abc", "18446744073709551615"} {
		cm.ResourceVersion = rv
		if tok, err := lflToken(cm); err == nil {
			t.Errorf("resourceVersion %q gave token %d, want an error", rv, tok)
		}
	}
	cm.OwnerReferences = []metav1.OwnerReference{{Kind: "Pod", Name: "candidate-c1", UID: "u1"}}
	if !lflOwnedBy(cm, "u1") || lflOwnedBy(cm, "u2") {
		t.Error("ownership is decided by the Pod's UID")
	}
}
