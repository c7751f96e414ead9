package libraries

import (
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// curator: Apache Curator 5.4.0 as Debian bookworm ships it (libraries/curator/Candidate.java),
// a client from CuratorFrameworkFactory.builder() with the session timeout = TTL, the
// connection timeout TTL/2 and ExponentialBackoffRetry(1000, 3), everything else at
// Curator's defaults (StandardConnectionStateErrorPolicy among them) except the
// EnsembleTracker, off because it pins the servers' IP addresses (R12). 5.4.0 carries the
// CURATOR-644 change (PR #430) and not the CURATOR-696 fix (PR #500, 5.7.0); Debian's jar has
// no backport (its LeaderLatch never reads an ephemeral owner).
var (
	curatorLeaderLatch = Recipe{
		Name: "curator-leaderlatch", Store: storekinds.ZooKeeper, Folder: "curator",
		Args: []string{"leaderlatch"},
		Summary: "Curator 5.4.0 LeaderLatch + LeaderLatchListener as its docs show: writes from isLeader() " +
			"until notLeader() (the default error policy already drops leadership on SUSPENDED)",
		Variant:  AsShipped,
		Token:    curatorLatchToken,
		Fenced:   true,
		Timing:   curatorTiming,
		Upstream: curatorUpstream,
	}
	curatorLeaderLatchSuspended = Recipe{
		Name: "curator-leaderlatch-suspended", Store: storekinds.ZooKeeper, Folder: "curator",
		Args: []string{"leaderlatch-suspended"},
		Summary: "Curator 5.4.0 LeaderLatch plus the recommended ConnectionStateListener: SUSPENDED or LOST " +
			"ends the belief at once; it comes back only with the latch's next isLeader()",
		Variant: AsRecommended,
		Advice: "leader-latch.html, \"Error Handling\": \"It is highly recommended that LeaderLatch users register a ConnectionStateListener\"; " +
			"leader-election.html, \"Error Handling\": on SUSPENDED the instance \"must assume that it might no longer be the leader until it receives a RECONNECTED state\", " +
			"on LOST it is no longer the leader (LeaderSelectorListenerAdapter: the client's error policy decides, isErrorState). " +
			"The listener ends the belief on every error state; with Curator 5's default StandardConnectionStateErrorPolicy the latch itself already " +
			"calls notLeader() on SUSPENDED (errors.html, \"Error Policy\"), so this variant only races the latch's own callback",
		Token:    curatorLatchToken,
		Fenced:   true,
		Timing:   curatorTiming,
		Upstream: curatorUpstream,
	}
	curatorLeaderSelector = Recipe{
		Name: "curator-leaderselector", Store: storekinds.ZooKeeper, Folder: "curator",
		Args: []string{"leaderselector"},
		Summary: "Curator 5.4.0 LeaderSelector + LeaderSelectorListenerAdapter + autoRequeue() as curator-examples' " +
			"ExampleClient: takeLeadership() writes until interrupted (the adapter cancels it on SUSPENDED/LOST)",
		Variant: AsRecommended,
		Advice: "leader-election.html, \"Error Handling\": \"The recommended action for receiving SUSPENDED or LOST is to throw CancelLeadershipException ... " +
			"you should consider extending LeaderSelectorListenerAdapter\", which the example and this adapter do; autoRequeue() as ExampleClient",
		Token: "the czxid of the lowest lock node under the selector's path, read (getChildren + getData) when takeLeadership() starts " +
			"and only if that node's data is this candidate's id: LeaderSelector does not expose its lock node. " +
			"czxid is ZooKeeper's global creation zxid, and the lowest live node is the lock holder, so a later grant's node was created later",
		Fenced:   true,
		Timing:   curatorTiming,
		Upstream: curatorUpstream,
	}
	curatorUpstream = []string{
		"https://github.com/apache/curator/issues/1211",
		"https://github.com/apache/curator/pull/500",
		"https://github.com/apache/curator/pull/430",
		"https://github.com/apache/druid/issues/16411",
		"https://curator.apache.org/curator-recipes/leader-latch.html",
		"https://curator.apache.org/curator-recipes/leader-election.html",
		"https://curator.apache.org/errors.html",
		"https://cwiki.apache.org/confluence/spaces/CURATOR/pages/68720068/TN12",
	}
)

const curatorLatchToken = "the czxid of the latch's own znode (getLastPathIsLeader(), the path the latch has just found lowest when it calls " +
	"isLeader(); one exists() call in isLeader()). czxid is the zxid of the node's create: global and growing, and the latch leads only from " +
	"the lowest live node, so a later grant is on a later node. Not the sequence number: the latch's parent is a container node that " +
	"ZooKeeper removes once empty, and the sequence restarts at 0 (seen: token 1 after 10 when every candidate restarted at once)"

// curatorTiming: the session timeout is the TTL (the server grants 1-60 s, ticks of 0.5 s).
// Waiters watch their predecessor's node. SIGTERM: close() deletes the latch node, the next
// waiter's watch fires, it reads the children and leads (tens of ms). SIGKILL: the server
// expires the session TTL after the last ping, checked in 0.5 s ticks, then the watch fires.
// R16: the adapter makes no store call of its own while leading; Curator's calls are
// background operations retried by ExponentialBackoffRetry(1000, 3), which Curator does not
// bound below the session timeout.
func curatorTiming(c contract.Config) runtime.Timing {
	return runtime.Timing{TTL: c.LeaseTTL,
		HandoffBound: time.Second, FailoverBound: c.LeaseTTL + 2*time.Second}
}
