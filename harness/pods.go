package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
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

// createPod gives p's next process a new Pod. p.mu must be held.
func (c *candidateProcs) createPod(ctx context.Context, p *proc) {
	ph := c.pods
	if ph == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, podCreateTimeout)
	defer cancel()
	t0 := time.Now()
	uid, err := ph.CreatePod(cctx, p.name)
	if err != nil {
		c.log.harnessError("", fmt.Sprintf("pod of %s not created before its start: %v", p.name, err))
		c.log.logf("WARNING: pod of %s not created: %v", p.name, err)
		return
	}
	p.podUID = uid
	c.log.logf("pod %s of %s created (uid %s) in %v", ph.PodName(p.name), p.name, uid, time.Since(t0).Round(time.Millisecond))
}

// podGone deletes the Pod of p's process that just exited, in the background (retrying
// while the API server does not answer). p.mu must be held.
func (c *candidateProcs) podGone(p *proc, why string) {
	ph := c.pods
	if ph == nil || p.podUID == "" {
		return
	}
	uid := p.podUID
	p.podUID = ""
	c.podDeletes.Add(1)
	go func() {
		defer c.podDeletes.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.root), podDeleteTimeout)
		defer cancel()
		t0 := time.Now()
		for {
			err := ph.DeletePod(ctx, p.name, uid)
			if err == nil {
				c.log.logf("pod %s of %s deleted (%s) in %v", ph.PodName(p.name), p.name, why, time.Since(t0).Round(time.Millisecond))
				return
			}
			select {
			case <-ctx.Done():
				c.log.logf("WARNING: pod %s of %s (uid %s) not deleted after %s: %v", ph.PodName(p.name), p.name, uid, why, err)
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

// evictPod deletes the Pod of candidate node while its process keeps running, as the node
// lifecycle controller does for a node it cannot reach (the evict fault).
func (c *candidateProcs) evictPod(ctx context.Context, node string) error {
	ph := c.pods
	if ph == nil {
		return fmt.Errorf("the store has no Pods to evict")
	}
	p := c.get(node)
	if p == nil {
		return fmt.Errorf("no candidate %q", node)
	}
	p.mu.Lock()
	uid := p.podUID
	p.podUID = "" // its exit deletes nothing more
	p.mu.Unlock()
	if uid == "" {
		return fmt.Errorf("candidate %s has no Pod (its process is not running, or was started without one)", node)
	}
	if err := ph.DeletePod(ctx, node, uid); err != nil {
		return err
	}
	c.log.logf("pod %s of %s evicted (uid %s); its process keeps running", ph.PodName(node), node, uid)
	return nil
}

// waitPodDeletes lets the Pod deletions of the candidates' last exits finish (teardown).
func (c *candidateProcs) waitPodDeletes(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		c.podDeletes.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		c.log.logf("WARNING: pod deletions still running at teardown")
	}
}

// nemesisNodes are the candidates' containers as the nemesis's nodes; on a store with Pods
// each is a podNode.
func (c *candidateProcs) nemesisNodes() []nemesis.Node {
	var out []nemesis.Node
	for _, p := range c.all() {
		switch {
		case p.node == nil:
		case c.pods != nil:
			out = append(out, podNode{dockerNode{p.node}, c, p})
		default:
			out = append(out, dockerNode{p.node})
		}
	}
	return out
}

// podNode is a candidate's node as the nemesis sees it on a store with Pods: a start
// (the heal of kill or evict) first creates the new process's Pod, and is recorded as
// a harness start.
type podNode struct {
	dockerNode
	c *candidateProcs
	p *proc
}

func (n podNode) Start(ctx context.Context) error {
	n.p.mu.Lock()
	defer n.p.mu.Unlock()
	return n.c.startAgainLocked(ctx, n.p)
}
