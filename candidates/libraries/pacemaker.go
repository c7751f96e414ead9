package libraries

import (
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// pacemaker: a Pacemaker 2.1.5 / Corosync 3.1.7 cluster as Debian ships it (libraries/pacemaker):
// every candidate is a cluster node, Pacemaker decides where the leader (an
// ocf:heartbeat:anything resource) runs and fences through fence-agents' fence_docker
// pointed at the run's fence device. No store: the cluster is its own. No token either:
// the rows run on the unfenced resource, so STONITH is the only safety.
var (
	pacemakerFencing = pacemakerRecipe("pacemaker-stonith", []string{"stonith=true"},
		"stonith-enabled=true with a stonith:fence_docker device, no-quorum-policy=stop (two_node with 2 nodes)")
	pacemakerNoStonith = pacemakerRecipe("pacemaker-no-stonith", []string{"stonith=false"},
		"stonith-enabled=false, as clusters are run without a fence device: only quorum (no-quorum-policy=stop) stops a cut-off node")
	pacemakerPriorityDelay = pacemakerRecipe("pacemaker-stonith-pfd", []string{"stonith=true", "priority-fencing-delay=5s"},
		"pacemaker-stonith plus priority-fencing-delay=5s (the leader's node is shot last in a 2-node fence race)")
)

func pacemakerRecipe(name string, args []string, how string) Recipe {
	return Recipe{
		Name: name, Store: storekinds.None, Folder: "pacemaker", Args: args,
		Summary: "Pacemaker/Corosync cluster of the candidates (corosync -f and pacemakerd from a start script, knet unicast, " +
			"token = TTL) running the leader as ocf:heartbeat:anything; " + how,
		Variant: AsShipped,
		Token: "none from Pacemaker: the label is the host's uptime in ms when the resource started, which grows " +
			"with every start",
		Fences: true,
		NoClockFaults: "the cluster runs on the host's clock: under libfaketime Python's time.sleep fails with EINVAL " +
			"and fence_docker died in every power-off wait (libraries/pacemaker/candidate)",
		Timing: pacemakerTiming,
		Upstream: []string{
			"https://clusterlabs.org/pacemaker/doc/2.1/Pacemaker_Explained/html/options.html",
			"https://github.com/ClusterLabs/fence-agents/blob/v4.12.1/agents/docker/fence_docker.py",
			"https://github.com/ClusterLabs/fence-agents/issues/581",
			"https://github.com/ClusterLabs/resource-agents/blob/v4.12.0/heartbeat/anything",
			"https://github.com/davidvossel/pacemaker_docker",
		},
	}
}

// pacemakerTiming: the token is the TTL in whole ms; Corosync adds token_coefficient (650 ms)
// per node beyond two and waits consensus (1.2 x token) before a new membership. Then the DC
// (re-elected when it was the lost node) fences (fence_docker: Python start, kill, status
// polled every second, start, status) and starts the leader (anything: nohup, then a
// monitor). The bound is loose: it is the figure docs/performance.md measures against.
func pacemakerTiming(c contract.Config) runtime.Timing {
	token := c.LeaseTTL
	if token <= 0 {
		token = 2 * time.Second
	}
	token = token.Round(time.Millisecond)
	membership := token + 650*time.Millisecond + token*12/10
	// The first leader comes 10-12 s after the start (docs/pacemaker.md): the DC election waits
	// out dc-deadtime (5 s), then the configuration, the fence device's start and the leader's.
	return runtime.Timing{TTL: token, Renew: token / 4,
		HandoffBound: 10 * time.Second, FailoverBound: membership + 15*time.Second, StartBound: 90 * time.Second}
}
