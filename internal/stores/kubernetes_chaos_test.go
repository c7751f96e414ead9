//go:build chaos

package stores_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

type kubeAdmin interface {
	AdminClient(ctx context.Context) (*kubernetes.Clientset, error)
}

// TestKubernetes: the control plane serves Leases to a candidate's credentials (and nothing
// RBAC does not grant), the garbage collector removes a dependent of a deleted owner, and
// the API server and etcd each come back after SIGKILL + start.
func TestKubernetes(t *testing.T) {
	ctx, cl, _ := launch(t, storekinds.Kubernetes, 0)
	if cl.Version() != "v1.34.2" {
		t.Errorf("version %q, want v1.34.2", cl.Version())
	}
	var names []string
	for _, n := range cl.Nodes() {
		names = append(names, n.Name())
	}
	if !slices.Equal(names, []string{"etcd", "kube-apiserver", "kube-controller-manager"}) {
		t.Fatalf("nodes %v", names)
	}
	if eps := cl.Endpoints(); !slices.Equal(eps, []string{"kube-apiserver:6443"}) {
		t.Errorf("endpoints %v, want the API server only", eps)
	}

	// A candidate's kubeconfig (pointed at the host port) works for Leases, not for Secrets.
	hostEPs, err := cl.HostEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := cl.(stores.Credentialed).Credentials("c1", hostEPs)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(cred.Kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v\n%s", err, cred.Kubeconfig)
	}
	cand, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	holder := "c1"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "test-lease"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	if _, err := cand.CoordinationV1().Leases("default").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("candidate creates a Lease: %v", err)
	}
	if _, err := cand.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("candidate lists Secrets: %v, want Forbidden", err)
	}

	// Garbage collector: the dependent of a deleted owner goes.
	admin, err := cl.(kubeAdmin).AdminClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cms := admin.CoreV1().ConfigMaps("default")
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := eventually(ctx, 60*time.Second, func(ctx context.Context) error {
		_, err := cms.Get(ctx, "dependent", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			return context.DeadlineExceeded
		}
		return err
	}); err != nil {
		t.Fatalf("the garbage collector did not delete the dependent ConfigMap: %v", err)
	}
	t.Logf("garbage collector removed the dependent %v after its owner", time.Since(deleted).Round(time.Millisecond))

	// Pods without a kubelet: each CreatePod is a new Pod (new UID) of the candidate's
	// name, DeletePod spares another incarnation, and a lock owned by a deleted Pod goes.
	ph := cl.(stores.PodHost)
	uid1, err := ph.CreatePod(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	uid2, err := ph.CreatePod(ctx, "c1")
	if err != nil || uid2 == uid1 {
		t.Fatalf("second CreatePod: uid %q (first %q), %v", uid2, uid1, err)
	}
	if err := ph.DeletePod(ctx, "c1", uid1); err != nil {
		t.Fatal(err)
	}
	pod, err := admin.CoreV1().Pods("default").Get(ctx, ph.PodName("c1"), metav1.GetOptions{})
	if err != nil || string(pod.UID) != uid2 {
		t.Fatalf("deleting the old incarnation touched the new Pod: %v, %v", pod.UID, err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lock",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A canary written after the lock, owned by the deleted incarnation (same Pod name, old
	// UID): once the garbage collector has removed it, its graph has taken in the lock, which
	// was written before. The lock outliving that is the test, not a second of waiting.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "canary",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: types.UID(uid1)}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := eventually(ctx, 60*time.Second, func(ctx context.Context) error {
		if _, err := cms.Get(ctx, "canary", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("canary still there: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatalf("a lock owned by the deleted incarnation %s stayed while a Pod of its name (%s) lives: %v", uid1, uid2, err)
	}
	if _, err := cms.Get(ctx, "lock", metav1.GetOptions{}); err != nil {
		t.Fatalf("the lock of a live Pod is gone: %v", err)
	}
	if err := ph.DeletePod(ctx, "c1", uid2); err != nil {
		t.Fatal(err)
	}
	deleted = time.Now()
	if err := eventually(ctx, 60*time.Second, func(ctx context.Context) error {
		if _, err := cms.Get(ctx, "lock", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("lock still there: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatalf("the lock owned by the deleted Pod stayed: %v", err)
	}
	t.Logf("pod deleted: the garbage collector removed its lock after %v", time.Since(deleted).Round(time.Millisecond))

	for _, name := range []string{"kube-apiserver", "etcd"} {
		n := node(t, cl, name)
		if err := n.Kill(ctx, "SIGKILL"); err != nil {
			t.Fatal(err)
		}
		waitStopped(t, ctx, n)
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if err := cl.Ready(rctx); err == nil {
			t.Errorf("ready with %s killed", name)
		}
		cancel()
		start := time.Now()
		if err := cl.RestartNode(ctx, n); err != nil {
			t.Fatalf("restart %s: %v", name, err)
		}
		t.Logf("%s: SIGKILL + start, serving again after %v", name, time.Since(start).Round(time.Millisecond))
		// etcd's data survives in the container: the Lease made before is still there. A
		// restart publishes new host ports, so a new client.
		admin, err := cl.(kubeAdmin).AdminClient(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoordinationV1().Leases("default").Get(ctx, "test-lease", metav1.GetOptions{}); err != nil {
			t.Errorf("after restarting %s: %v", name, err)
		}
	}

	// Reset wipes what a run leaves (a Pod, a Lease, a ConfigMap, Events) and keeps what the
	// launch made: RBAC and the default ServiceAccount, so a candidate works right after.
	kubeResetWipesARun(t, ctx, cl)
}

func kubeResetWipesARun(t *testing.T, ctx context.Context, cl stores.Cluster) {
	admin, err := cl.(kubeAdmin).AdminClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.(stores.PodHost).CreatePod(ctx, "c2"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lock"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "elected"},
		InvolvedObject: corev1.ObjectReference{Kind: "Lease", Namespace: "default", Name: "test-lease"}, Reason: "LeaderElection"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := stores.Reset(rctx, cl); err != nil {
		t.Fatalf("reset: %v", err)
	}
	pods, err1 := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	leases, err2 := admin.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{})
	cms, err3 := admin.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	evs, err4 := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	if n := len(pods.Items) + len(leases.Items) + len(cms.Items) + len(evs.Items); n != 0 {
		t.Errorf("after reset: %d Pods, %d Leases, %d ConfigMaps, %d Events, want none",
			len(pods.Items), len(leases.Items), len(cms.Items), len(evs.Items))
	}
	if _, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the default ServiceAccount went with the reset: %v", err)
	}
	hostEPs, err := cl.HostEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := cl.(stores.Credentialed).Credentials("c3", hostEPs)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(cred.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cand, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	holder := "c3"
	if _, err := cand.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "test-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("a candidate creates the Lease again after the reset: %v", err)
	}
	if err := cl.Ready(ctx); err != nil {
		t.Errorf("cluster does not serve after reset: %v", err)
	}
}

func node(t *testing.T, cl stores.Cluster, name string) *platform.Node {
	t.Helper()
	for _, n := range cl.Nodes() {
		if n.Name() == name {
			return n
		}
	}
	t.Fatalf("no node %s", name)
	return nil
}
