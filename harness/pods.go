package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// Pods without a kubelet (docs/stores.md): on a store whose candidates live in Pods
// (stores.PodHost: kubernetes) the harness plays each candidate's node. Every start of a
// candidate's process, by the harness or the nemesis, is preceded by a new Pod of the
// candidate's name; every exit the harness observes (crash, kill, normal exit, teardown)
// deletes that Pod, as the kubelet does. Recipes that tie state to their Pod see the same
// lifecycle as in a cluster; other stores are untouched.

const (
	// podCreateTimeout bounds one Pod's creation before a start (the start goes ahead
	// without it: the candidate cannot find its Pod and says so).
	podCreateTimeout = 20 * time.Second
	// podDeleteTimeout bounds the retries of a Pod's deletion after its process exited (the
	// API server may be down under a fault; a kubelet retries as well).
	podDeleteTimeout = 60 * time.Second
)

// podHostOf is the store cluster as a PodHost; nil when candidates have no Pods.
func podHostOf(store stores.Cluster) stores.PodHost {
	ph, _ := store.(stores.PodHost)
	return ph
}

// kubelet creates and deletes the candidates' Pods on a PodHost, as a node's kubelet would.
// The candidates stage calls it around every start and exit of a process (procs.go).
type kubelet struct {
	host    stores.PodHost
	root    context.Context // the run's: deletions outlive a cancelled run, bounded
	log     *journal
	deletes sync.WaitGroup // Pods of exited processes being deleted
}

// newKubelet is nil when the store has no Pods: every method is then a no-op.
func newKubelet(host stores.PodHost, root context.Context, log *journal) *kubelet {
	if host == nil {
		return nil
	}
	return &kubelet{host: host, root: root, log: log}
}

// create gives candidate's next process a new Pod and returns its uid ("" = none: the
// start goes ahead, and the candidate says it cannot find its Pod).
func (k *kubelet) create(ctx context.Context, candidate string) string {
	if k == nil {
		return ""
	}
	cctx, cancel := context.WithTimeout(ctx, podCreateTimeout)
	defer cancel()
	t0 := time.Now()
	uid, err := k.host.CreatePod(cctx, candidate)
	if err != nil {
		k.log.harnessError("", fmt.Sprintf("pod of %s not created before its start: %v", candidate, err))
		k.log.logf("WARNING: pod of %s not created: %v", candidate, err)
		return ""
	}
	k.log.logf("pod %s of %s created (uid %s) in %v", k.host.PodName(candidate), candidate, uid, time.Since(t0).Round(time.Millisecond))
	return uid
}

// gone deletes the Pod uid of candidate's process that just exited, in the background
// (retrying while the API server does not answer).
func (k *kubelet) gone(candidate, uid, why string) {
	if k == nil || uid == "" {
		return
	}
	k.deletes.Add(1)
	go func() {
		defer k.deletes.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(k.root), podDeleteTimeout)
		defer cancel()
		t0 := time.Now()
		for {
			err := k.host.DeletePod(ctx, candidate, uid)
			if err == nil {
				k.log.logf("pod %s of %s deleted (%s) in %v", k.host.PodName(candidate), candidate, why, time.Since(t0).Round(time.Millisecond))
				return
			}
			select {
			case <-ctx.Done():
				k.log.logf("WARNING: pod %s of %s (uid %s) not deleted after %s: %v", k.host.PodName(candidate), candidate, uid, why, err)
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

// evict deletes the Pod uid of candidate while its process keeps running, as the node
// lifecycle controller does for a node it cannot reach (the evict fault).
func (k *kubelet) evict(ctx context.Context, candidate, uid string) error {
	if err := k.host.DeletePod(ctx, candidate, uid); err != nil {
		return err
	}
	k.log.logf("pod %s of %s evicted (uid %s); its process keeps running", k.host.PodName(candidate), candidate, uid)
	return nil
}

// wait lets the Pod deletions of the candidates' last exits finish (teardown).
func (k *kubelet) wait(ctx context.Context) {
	if k == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		k.deletes.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		k.log.logf("WARNING: pod deletions still running at teardown")
	}
}
