//go:build broken

package main

import "go.etcd.io/etcd/client/v3/concurrency"

// terms counts this process's own terms.
var terms int64

// tokenFor is the DELIBERATELY BROKEN twin's token: a counter of its own terms, not a value
// from the store. Every candidate's first term gets token 1, so two leaders share a token
// and the resource cannot tell them apart (the matrix shows the run invalid).
func tokenFor(*concurrency.Election) int64 {
	terms++
	return terms
}
