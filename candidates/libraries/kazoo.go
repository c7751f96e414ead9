package libraries

import (
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// kazoo: kazoo 2.8.0 (Debian) Election.run (libraries/kazoo/kazoo_election.py), with
// KazooClient(hosts=<endpoints>, timeout=TTL) and everything else at kazoo's defaults.
var (
	kazooElection = Recipe{
		Name: "kazoo-election", Store: storekinds.ZooKeeper, Folder: "kazoo",
		Args:    []string{"shipped"},
		Summary: "kazoo 2.8.0 zk.Election(path, id).run(leader) as its docstring shows; the leader function writes until SIGTERM or a 409 and is never told of a lost session",
		Variant: AsShipped,
		Token:   kazooToken,
		Fenced:  true,
		Timing:  kazooTiming,
		Upstream: []string{
			"https://github.com/python-zk/kazoo/issues/2",
			"https://kazoo.readthedocs.io/en/latest/api/recipe/election.html",
			"https://github.com/python-zk/kazoo/blob/2.8.0/kazoo/recipe/election.py",
			"https://github.com/python-zk/kazoo/issues/622",
		},
	}
	kazooElectionListener = Recipe{
		Name: "kazoo-election-listener", Store: storekinds.ZooKeeper, Folder: "kazoo",
		Args:    []string{"listener"},
		Summary: "kazoo 2.8.0 Election.run plus the recommended state listener: KazooState.SUSPENDED or LOST ends the leader function (checked before every write)",
		Variant: AsRecommended,
		Advice: "kazoo.recipe.lock module docstring: \"It's highly recommended to add a state listener with add_listener and watch for LOST and SUSPENDED state changes and re-act appropriately\"; " +
			"docs/basic_usage.rst, \"Understanding Kazoo States\": on SUSPENDED a Lock user \"should pause what it's doing\", after LOST the lock must be re-acquired. " +
			"The adapter's listener records SUSPENDED/LOST; the leader function checks the record before every write and returns (releasing the lock) when set",
		Token:  kazooToken,
		Fenced: true,
		Timing: kazooTiming,
		Upstream: []string{
			"https://github.com/python-zk/kazoo/issues/2",
			"https://kazoo.readthedocs.io/en/latest/api/recipe/lock.html",
			"https://kazoo.readthedocs.io/en/latest/basic_usage.html#understanding-kazoo-states",
			"https://github.com/python-zk/kazoo/issues/622",
		},
	}
)

const kazooToken = "the sequence number of the election Lock's own znode (Election.lock.node, <uuid>__lock__NNNNNNNNNN) + 1: " +
	"ZooKeeper numbers the children of the election path in creation order and the lowest live one holds the lock"

// kazooTiming: the session timeout is the TTL (the server grants 1-60 s, ticks of 0.5 s);
// kazoo pings every TTL/3 and reports SUSPENDED after 2/3 TTL without an answer. Waiters
// watch their predecessor's znode. SIGTERM: the leader function returns and run()'s
// with-block deletes the znode, the next waiter's watch fires. SIGKILL: the server expires
// the session TTL after the last ping, checked in 0.5 s ticks, then the watch fires.
func kazooTiming(c contract.Config) runtime.Timing {
	return runtime.Timing{TTL: c.LeaseTTL,
		HandoffBound: time.Second, FailoverBound: c.LeaseTTL + 2*time.Second}
}
