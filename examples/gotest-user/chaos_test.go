//go:build chaos

package main

import (
	"os"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/splitbraintest"
)

// TestElectionIsSafe assesses leaderd with splitbrain's battery for etcd: every check (kill
// the leader, pause it, cut it off from etcd, ...) is a subtest on real etcd servers with real
// faults, and a failing one says which fault broke the election and where its report is.
//
//	go test -tags chaos ./...          the battery for etcd
//	go test -tags chaos -short ./...   the short battery
//
// CANDIDATE_TAGS=broken assesses the deliberately broken twin (token_broken.go) instead:
// splitbrain's own tests use it to show that a check catches it.
func TestElectionIsSafe(t *testing.T) {
	var flags []string
	if tags := os.Getenv("CANDIDATE_TAGS"); tags != "" {
		flags = append(flags, "-tags", tags)
	}
	leaderd := splitbraintest.BuildGo(t, ".", flags...)
	splitbraintest.Assess(t, splitbraintest.Candidate{Cmd: leaderd, Store: "etcd"})
}
