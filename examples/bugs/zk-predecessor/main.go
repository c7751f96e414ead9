// Command zk-predecessor: a ZooKeeper waiter that takes the lead when the znode it watches
// (its predecessor) is deleted, without checking that no lower znode is left.
//
// Reference: https://github.com/ewhauser/zookeeper/pull/31 ("Bug fix where 2 candidates can
// become leaders": with candidates 1-4, killing candidate 3 made candidate 4 a leader beside
// candidate 1); the rule it restores is the ZooKeeper recipes page's leader election
// (https://zookeeper.apache.org/doc/current/recipes.html#sc_leaderElection: on the
// notification, list the children again and lead only if the own znode is the smallest).
//
// Mechanism: the middle waiter dies, its session expires and its znode is deleted; the waiter
// behind it was watching exactly that znode and declares itself leader while the real
// leader (the lowest znode) still leads. That library is Java; this is the same logic with
// go-zookeeper/zk.
//
// Fix: on the deletion, list the children again (as the recipe says). Built with -tags buggy
// the candidate trusts the deletion.
//
//	CGO_ENABLED=0 go build -tags buggy -o /tmp/zk-predecessor ./examples/bugs/zk-predecessor
package main

import "github.com/splitbrain-chaos/splitbrain/examples/bugs/internal/zkelect"

func main() { zkelect.Run(zkelect.Options{TrustPredecessorDelete: buggy}) }
