//go:build !core

package stores

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// kubeRootCA is the ConfigMap a full control plane publishes into every namespace; it is not
// a recipe's, so the wipe leaves it (this cluster's controller manager does not publish it;
// the selector costs nothing on the other kinds).
const kubeRootCA = "kube-root-ca.crt"

// kubeWiped is one kind of object the recipes or the harness leave in KubeNamespace.
type kubeWiped struct {
	kind string
	wipe func(context.Context, metav1.DeleteOptions, metav1.ListOptions) error
	list func(context.Context, metav1.ListOptions) (runtime.Object, error)
}

func kubeWipedKinds(cs *kubernetes.Clientset) []kubeWiped {
	pods := cs.CoreV1().Pods(KubeNamespace)
	leases := cs.CoordinationV1().Leases(KubeNamespace)
	cms := cs.CoreV1().ConfigMaps(KubeNamespace)
	events := cs.CoreV1().Events(KubeNamespace)
	return []kubeWiped{
		{"Pods", pods.DeleteCollection, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) }},
		{"Leases", leases.DeleteCollection, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return leases.List(ctx, o) }},
		{"ConfigMaps", cms.DeleteCollection, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx, o) }},
		{"Events", events.DeleteCollection, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return events.List(ctx, o) }},
	}
}

// kubeLeft lists the names k still holds in KubeNamespace (but kubeRootCA).
func kubeLeft(ctx context.Context, k kubeWiped) ([]string, error) {
	l, err := k.list(ctx, kubeWipeSelector)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, it := range items {
		m, err := meta.Accessor(it)
		if err != nil {
			return nil, err
		}
		names = append(names, m.GetName())
	}
	slices.Sort(names)
	return names, nil
}

// kubeWipeSelector selects every object the wipe is for.
var kubeWipeSelector = metav1.ListOptions{FieldSelector: "metadata.name!=" + kubeRootCA}

// Reset deletes what runs leave in namespace default: the candidates' Pods, the recipes'
// Leases and ConfigMaps (leader-for-life's lock) and the Events their clients recorded,
// verified by listing each kind empty. What the launch made (RBAC, the namespace's default
// ServiceAccount) stays. Resource versions go on counting, like etcd revisions.
func (c *kubeCluster) Reset(ctx context.Context) error {
	cs, err := c.AdminClient(ctx)
	if err != nil {
		return fmt.Errorf("kubernetes reset: %w", err)
	}
	// Unscheduled Pods go at once with no grace period (no kubelet has to confirm).
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	kinds := kubeWipedKinds(cs)
	for _, k := range kinds {
		if err := k.wipe(ctx, now, kubeWipeSelector); err != nil {
			return fmt.Errorf("kubernetes reset: delete %s: %w", k.kind, err)
		}
	}
	// A deletion can be finished asynchronously (finalizers, the garbage collector's own
	// deletes of dependents): wait until every list is empty.
	for {
		var left []string
		var errs []error
		for _, k := range kinds {
			names, err := kubeLeft(ctx, k)
			if err != nil {
				errs = append(errs, fmt.Errorf("list %s: %w", k.kind, err))
			} else if len(names) > 0 {
				left = append(left, k.kind+" "+strings.Join(names, ", "))
			}
		}
		if len(errs) == 0 && len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if len(errs) > 0 {
				return fmt.Errorf("kubernetes reset: %w", errors.Join(errs...))
			}
			return fmt.Errorf("kubernetes reset: left after the wipe: %s", strings.Join(left, "; "))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var _ Resetter = (*kubeCluster)(nil)
