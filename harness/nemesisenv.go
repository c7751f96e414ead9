package harness

import (
	"context"
	"fmt"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// nemesisEnv is the run as the nemesis sees it: its Docker nodes behind the nemesis's
// narrow Node interface, read through the fault stage.
type nemesisEnv struct{ f *faultEnv }

// Candidates are the candidates' containers; on a store with Pods each is a podNode.
func (n nemesisEnv) Candidates() []nemesis.Node {
	var out []nemesis.Node
	for _, p := range n.f.cands.all() {
		switch {
		case p.node == nil:
		case n.f.cands.hasPods():
			out = append(out, podNode{dockerNode{p.node}, n.f.cands, p})
		default:
			out = append(out, dockerNode{p.node})
		}
	}
	return out
}

func (n nemesisEnv) StoreNodes() []nemesis.Node {
	store := n.f.cluster.storeCluster()
	if store == nil {
		return nil // a store-less run
	}
	var out []nemesis.Node
	for _, nd := range store.Nodes() {
		out = append(out, dockerNode{nd})
	}
	return out
}

func (n nemesisEnv) StoreKind() string { return n.f.store }

func (n nemesisEnv) Leaders() []nemesis.Leader {
	var out []nemesis.Leader
	for _, t := range n.f.log.state.Leaders() {
		out = append(out, nemesis.Leader{Node: t.Node, Token: t.Token})
	}
	return out
}

func (n nemesisEnv) StoreLeader(ctx context.Context) (string, error) {
	store := n.f.cluster.storeCluster()
	if store == nil {
		return "", fmt.Errorf("a --store none run has no store leader")
	}
	node, err := store.Leader(ctx)
	if err != nil {
		return "", err
	}
	return node.Name(), nil
}

// StartSidecar enters target's network namespace from the host where it can
// (platform.HostNetnsUsable: no container at all), else starts a tools container in it,
// labelled with the run so its sweep removes it if the nemesis cannot.
func (n nemesisEnv) StartSidecar(ctx context.Context, target nemesis.Node) (nemesis.Sidecar, error) {
	if h := hostNetns(ctx, target); h != nil {
		return h, nil
	}
	image := n.f.imgs[images.RoleTools]
	if image == "" {
		return nil, fmt.Errorf("no tools image: the run must provide images.RoleTools for network faults")
	}
	return n.f.eng.Start(ctx, n.f.runID, nil, platform.NodeSpec{
		Name:        nemesis.SidecarName(target.Name()),
		Role:        "tools",
		Image:       image,
		Entrypoint:  []string{"sleep", "infinity"},
		CapAdd:      []string{"NET_ADMIN"},
		NetworkMode: "container:" + target.ID(),
		LogDir:      n.f.log.logDir(),
	})
}

// rulesWay says how this process applies network rules, for the run's log.
func rulesWay() string {
	if ok, why := platform.HostNetnsUsable(); !ok {
		return "from a tools sidecar beside each node (" + why + ")"
	}
	return "from the host in each node's namespace (nsenter; a tools sidecar for a node whose namespace cannot be opened)"
}

// hostNetns is the way into n's network namespace from the host, or nil where there is none
// (platform.HostNetnsUsable) or n is not running: the caller starts a tools sidecar instead.
func hostNetns(ctx context.Context, n interface {
	Name() string
	ID() string
	HostPID(context.Context) (int, error)
}) *platform.HostNetns {
	if ok, _ := platform.HostNetnsUsable(); !ok {
		return nil
	}
	pid, err := n.HostPID(ctx)
	if err != nil {
		return nil
	}
	h, err := platform.OpenHostNetns(n.Name(), n.ID(), pid)
	if err != nil {
		return nil
	}
	return h
}

// StoreProxy is the run's fault proxy, nil when the candidates connect to the store directly.
func (n nemesisEnv) StoreProxy() nemesis.StoreProxy {
	if n.f.proxy == nil {
		return nil
	}
	return n.f.proxy
}

func (n nemesisEnv) Record(e history.Event) error {
	_, err := n.f.log.record(e)
	return err
}

// EvictPod implements nemesis.PodEnv.
func (n nemesisEnv) EvictPod(ctx context.Context, candidate string) error {
	if !n.f.cands.hasPods() {
		return fmt.Errorf("store %s has no Pods to evict", n.f.store)
	}
	return n.f.cands.evictPod(ctx, candidate)
}

// CandidateClockHostFile is the host path of a candidate's clock file (nemesis.CandidateClockHostEnv).
func (n nemesisEnv) CandidateClockHostFile(candidate string) string {
	return n.f.clock.hostFile(candidate)
}

// CandidateFaketimeHostFile is the host path of a library candidate's libfaketime file
// (nemesis.CandidateFaketimeEnv); "" for candidates that read the contract's clock file.
func (n nemesisEnv) CandidateFaketimeHostFile(candidate string) string {
	if !n.f.faketime {
		return ""
	}
	return n.f.clock.faketimeFile(candidate)
}

var _ nemesis.PodEnv = nemesisEnv{}
var _ nemesis.CandidateFaketimeEnv = nemesisEnv{}

// dockerNode is a platform node as the nemesis's Node.
type dockerNode struct{ *platform.Node }

func (d dockerNode) State(ctx context.Context) (nemesis.NodeState, error) {
	st, err := d.Node.State(ctx)
	return nemesis.NodeState{Status: st.Status, Running: st.Running, Paused: st.Paused}, err
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
