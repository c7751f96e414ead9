//go:build !core

package stores

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodName: "candidate-" + the node id (node ids are DNS labels: c1, c2, ...).
func (c *kubeCluster) PodName(node string) string { return "candidate-" + strings.ToLower(node) }

func (c *kubeCluster) CreatePod(ctx context.Context, node string) (string, error) {
	cs, err := c.AdminClient(ctx)
	if err != nil {
		return "", err
	}
	pods := cs.CoreV1().Pods(KubeNamespace)
	name := c.PodName(node)
	// A Pod that was never scheduled is removed at once (no kubelet to confirm), so the
	// leftover is gone when Get says so.
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("delete leftover pod %s: %w", name, err)
	}
	no := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "splitbrain-candidate", "splitbrain/node": node}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &no,
			Containers:                   []corev1.Container{{Name: "candidate", Image: "splitbrain-candidate"}},
		},
	}
	for {
		got, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		switch {
		case err == nil:
			return string(got.UID), nil
		// The leftover is still being removed, or the service account controller has not
		// made the namespace's default ServiceAccount yet (Pod admission needs it).
		case apierrors.IsAlreadyExists(err), apierrors.IsForbidden(err) && strings.Contains(err.Error(), "service account"):
		default:
			return "", fmt.Errorf("create pod %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("create pod %s: %w (last: %v)", name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *kubeCluster) DeletePod(ctx context.Context, node, uid string) error {
	cs, err := c.AdminClient(ctx)
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	if uid != "" {
		u := types.UID(uid)
		opts.Preconditions = &metav1.Preconditions{UID: &u}
	}
	err = cs.CoreV1().Pods(KubeNamespace).Delete(ctx, c.PodName(node), opts)
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) { // Conflict: a newer incarnation
		return nil
	}
	return fmt.Errorf("delete pod %s: %w", c.PodName(node), err)
}

var _ PodHost = (*kubeCluster)(nil)
