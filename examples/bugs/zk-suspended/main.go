// Command zk-suspended: a ZooKeeper leader that keeps leading while its session is only
// disconnected (Curator: SUSPENDED), until the session is reported expired (LOST).
//
// Reference: https://github.com/apache/curator/issues/980 (CURATOR-460, "Timed tolerance for
// connection suspended leads to simultaneous leaders"); also
// https://github.com/Netflix/curator/issues/68 and Curator's tech note TN10
// (https://cwiki.apache.org/confluence/display/CURATOR/TN10).
//
// Mechanism: a leader cut off from the ensemble hears nothing; the server expires its session
// after the session timeout and the next waiter takes over, but go-zookeeper (like Curator)
// reports Expired only once it reaches a server again, after the cut. Until then the old
// leader writes on. Curator is Java: this is its leader logic with go-zookeeper/zk, the
// client library the project's own zookeeper-seq recipe uses.
//
// Fix (Curator's documented rule, and CURATOR-460's): treat Disconnected (SUSPENDED) as the
// end of the term, and do not depend on when the library reports it: the leader also keeps
// its own deadline, the send time of the previous answered sync + the session timeout (the
// ensemble leader cannot expire the session before; zkelect's ownDeadline says why), and
// stops when it passes. Stepping down at Disconnected alone was flagged by a halves
// partition on a loaded host, where Disconnected came 0.45 s after the successor's
// election (docs/findings.md). Built with -tags buggy the candidate ignores Disconnected
// and keeps no deadline.
//
//	CGO_ENABLED=0 go build -tags buggy -o /tmp/zk-suspended ./examples/bugs/zk-suspended
package main

import "github.com/splitbrain-chaos/splitbrain/examples/bugs/internal/zkelect"

func main() { zkelect.Run(zkelect.Options{IgnoreDisconnect: buggy}) }
