//go:build !broken

package main

import "go.etcd.io/etcd/client/v3/concurrency"

// tokenFor is the fencing token of a won election: the create revision of this candidate's
// key, unique and increasing across the whole etcd cluster.
func tokenFor(el *concurrency.Election) int64 { return el.Rev() }
