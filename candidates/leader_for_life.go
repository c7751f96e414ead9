//go:build !core

package candidates

// leader-for-life: operator-framework operator-lib's leader.Become, the "leader for life"
// lock of Kubernetes operators. operator-lib is not served by the module proxy reachable
// here, so this is its algorithm written with client-go: create a lock ConfigMap whose one
// ownerReference is the candidate's own Pod; on AlreadyExists poll with a jittered,
// doubling backoff. The lock is never renewed or released: it lasts until the Pod is
// deleted and the garbage collector deletes the lock with it. Token = the resourceVersion
// the winning create returned (the etcd revision of that create). Loss detection: none —
// that is the pattern (docs/candidates.md, leader-for-life).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var leaderForLife = runtime.Spec{
	Name: "leader-for-life", Store: storekinds.Kubernetes,
	Summary: "operator-lib leader.Become: a lock ConfigMap owned by the candidate's Pod, gone only when the garbage collector follows the Pod; token = the lock's creation resourceVersion; no loss detection",
	Timing:  leaderForLifeTiming,
	New:     newLeaderForLife,
}

const (
	// lflBackoffGrowth: operator-lib polls after 1 s, doubling while below its
	// maxBackoffInterval of 16 s, each wait jittered by up to +20 % (wait.Jitter(d, 0.2)).
	lflBackoffGrowth = 16
	lflJitter        = 0.2
	// lflNodeAllowance: the leader's process ends, the node (here the harness) deletes its
	// Pod, the garbage collector sees the delete and deletes the lock. Measured 6-9 ms to the
	// Pod's deletion and 2-105 ms more to the lock's (docs/performance.md); 2 s allows for a
	// loaded machine and a garbage collector still syncing after its start (1.2 s seen).
	lflNodeAllowance = 2 * time.Second
)

// leaderForLifeTiming scales operator-lib's schedule (1 s doubling to 16 s) to the run:
// the first wait is TTL/8 (SPLITBRAIN_RETRY_INTERVAL overrides), the last 16 times that, so
// the default 2 s TTL gives 250 ms doubling to 4 s. There is no lease: TTL only bounds the
// client's calls. Handoff and crash failover are the same path (the process ends, the Pod
// goes, the GC deletes the lock), bounded by the node allowance plus the longest wait.
func leaderForLifeTiming(c contract.Config) runtime.Timing {
	first := c.LeaseTTL / 8
	if c.RetryInterval > 0 {
		first = c.RetryInterval
	}
	first = max(first, 10*time.Millisecond)
	longest := time.Duration(float64(first*lflBackoffGrowth) * (1 + lflJitter))
	bound := lflNodeAllowance + longest + 500*time.Millisecond
	return runtime.Timing{TTL: c.LeaseTTL, Retry: first, HandoffBound: bound, FailoverBound: bound}
}

type leaderForLifeRecipe struct {
	env  runtime.Env
	cs   *kubernetes.Clientset
	name string // the lock ConfigMap
	pod  string // this candidate's Pod
}

func newLeaderForLife(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
	if env.PodName == "" {
		return nil, fmt.Errorf("%s is empty: leader-for-life ties its lock to the candidate's own Pod, which the harness creates on the kubernetes store", contract.EnvPodName)
	}
	cs, err := k8sClient(env)
	if err != nil {
		return nil, err
	}
	return &leaderForLifeRecipe{env: env, cs: cs, name: k8sObjectName(env.ElectionName) + "-lock", pod: env.PodName}, nil
}

// Campaign is one leader.Become call.
func (r *leaderForLifeRecipe) Campaign(ctx context.Context) (runtime.Term, error) {
	// operator-lib's myOwnerRef: our Pod, read anew each Become. A process whose Pod was
	// deleted (evicted) cannot campaign again.
	pod, err := r.cs.CoreV1().Pods(contract.KubeNamespace).Get(ctx, r.pod, metav1.GetOptions{})
	if err != nil {
		return runtime.Term{}, fmt.Errorf("own pod %s: %w", r.pod, err)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	cms := r.cs.CoreV1().ConfigMaps(contract.KubeNamespace)

	// A lock of our own Pod: an earlier Become of this process created it and its reply was
	// lost. operator-lib compares the owner's name; the UID is compared here, so a Pod
	// re-created under the same name does not adopt its predecessor's lock, which the
	// garbage collector is about to delete.
	existing, err := cms.Get(ctx, r.name, metav1.GetOptions{})
	switch {
	case err == nil:
		if lflOwnedBy(existing, pod.UID) {
			tok, err := lflToken(existing)
			if err != nil {
				return runtime.Term{}, err
			}
			r.env.Logf("found the lock of my own pod %s (uid %s): continuing as the leader", pod.Name, pod.UID)
			return runtime.Term{Token: tok, Lost: context.Background()}, nil
		}
	case apierrors.IsNotFound(err):
	default:
		return runtime.Term{}, fmt.Errorf("get lock %s: %w", r.name, err)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: contract.KubeNamespace,
		OwnerReferences: []metav1.OwnerReference{owner}}}
	backoff := r.env.Timing.Retry
	for {
		callT := history.Now()
		got, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		switch {
		case err == nil:
			tok, err := lflToken(got)
			if err != nil {
				return runtime.Term{}, err
			}
			// Leader for life: no lease to renew, nothing watched. Only the process's end
			// (or the resource fencing a write) ends the term.
			return runtime.Term{Token: tok, CallT: callT, Lost: context.Background()}, nil
		case apierrors.IsAlreadyExists(err):
			if gone := r.observe(ctx); gone {
				continue // deleted since our create: try again at once, as operator-lib does
			}
		default:
			return runtime.Term{}, fmt.Errorf("create lock %s: %w", r.name, err)
		}
		wait := time.Duration(float64(backoff) * (1 + lflJitter*rand.Float64()))
		select {
		case <-ctx.Done():
			return runtime.Term{}, ctx.Err()
		case <-time.After(wait):
		}
		if backoff < r.env.Timing.Retry*lflBackoffGrowth {
			backoff *= 2
		}
	}
}

// observe is operator-lib's look at the lock that stopped our create: who owns it and
// whether that Pod still exists. It only logs (its branches that delete an Evicted leader
// Pod or one on a NotReady Node cannot fire here: no kubelet sets Evicted, there are no
// Nodes). gone: the lock was deleted meanwhile.
func (r *leaderForLifeRecipe) observe(ctx context.Context) (gone bool) {
	existing, err := r.cs.CoreV1().ConfigMaps(contract.KubeNamespace).Get(ctx, r.name, metav1.GetOptions{})
	if err != nil {
		return apierrors.IsNotFound(err)
	}
	owners := existing.GetOwnerReferences()
	switch {
	case len(owners) != 1:
		r.env.Logf("lock %s must have exactly one owner reference, has %d", r.name, len(owners))
	case owners[0].Kind != "Pod":
		r.env.Logf("lock %s is owned by a %s, not a Pod", r.name, owners[0].Kind)
	default:
		_, err := r.cs.CoreV1().Pods(contract.KubeNamespace).Get(ctx, owners[0].Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			r.env.Logf("leader pod %s has been deleted, waiting for garbage collection to remove the lock", owners[0].Name)
		case err != nil:
			r.env.Logf("leader pod %s: %v", owners[0].Name, err)
		}
	}
	return false
}

// Resign does nothing: leader-for-life has no release. The lock goes when the Pod goes.
func (r *leaderForLifeRecipe) Resign(context.Context) error { return nil }

func (r *leaderForLifeRecipe) Close() error { return nil }

func lflOwnedBy(cm *corev1.ConfigMap, uid types.UID) bool {
	for _, o := range cm.GetOwnerReferences() {
		if o.Kind == "Pod" && o.UID == uid {
			return true
		}
	}
	return false
}

// lflToken is the lock's resourceVersion as a number. The API server documents
// resourceVersion as opaque; on etcd it is the revision of the object's last write, and
// nothing writes the lock after its create, so it is the create's revision. Every later
// lock is created after this one was deleted, in a later revision of the same etcd: the
// tokens grow with every new leader (docs/candidates.md, leader-for-life).
func lflToken(cm *corev1.ConfigMap) (int64, error) {
	v, err := strconv.ParseUint(cm.ResourceVersion, 10, 64)
	if err != nil || v < 1 || v > math.MaxInt64 {
		return 0, errors.Join(fmt.Errorf("lock %s: resourceVersion %q is not a revision 1..2^63-1", cm.Name, cm.ResourceVersion), err)
	}
	return int64(v), nil
}
