package harness

import (
	"errors"
	"fmt"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// Store-less runs (--store none): no store cluster starts; the candidates elect among
// themselves over SPLITBRAIN_PEERS (docs/candidates.md, section 7). Faults between
// candidates work as in any run; anything aimed at the store is refused before anything
// starts, since there is nothing it could hit.

// checkNoClock refuses the clock faults of sched aimed at candidates of a recipe that
// declares clock faults do not reach them (runtime.Info.NoClockFaults): the step would be
// recorded, and the run judged, though nothing read the clock it moved.
func checkNoClock(sched nemesis.Schedule, recipe, why string) error {
	var errs []error
	for i, f := range sched.Faults {
		if f.Kind == "clock" && ClockOnCandidates(f) {
			errs = append(errs, fmt.Errorf("fault %d (clock): recipe %s's candidates run on the host's clock (%s); clock faults do not reach them", i+1, recipe, why))
		}
	}
	return errors.Join(errs...)
}

// ClockOnCandidates says a clock fault moves candidates' clocks (not only store nodes').
func ClockOnCandidates(f nemesis.FaultSpec) bool {
	return f.Target != nemesis.TargetAllStore && !strings.HasPrefix(f.Target, "store-")
}

// peerAddrs are the candidates' peer addresses on the run network: each candidate's
// network alias is its node id.
func peerAddrs(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%s:%d", n, contract.DefaultPeerPort)
	}
	return out
}

// checkStoreless refuses every fault of sched that needs a store, naming what to use
// instead. Defaults that would point at the store (one-way's peer, the among= of
// majorities-ring and bridge) must be given explicitly.
func checkStoreless(sched nemesis.Schedule) error {
	var errs []error
	for i, f := range sched.Faults {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("fault %d (%s): %s; a --store none run has no store nodes", i+1, f.Kind, fmt.Sprintf(format, args...)))
		}
		if f.Target == nemesis.TargetAllStore || strings.HasPrefix(f.Target, "store-") {
			bad("target=%s aims at the store; use leader, follower, random-candidate, all-candidates or node:cN", f.Target)
		}
		if k, _ := nemesis.Info(f.Kind); !k.Network {
			continue // only network faults take shape/peer/among
		}
		shape, peer, among := f.Params["shape"], f.Params["peer"], f.Params["among"]
		switch {
		case shape == "leader-from-store":
			bad("shape=leader-from-store cuts the leader from the store; cut it from its peers with partition:shape=isolate (target leader, peer all by default)")
		case shape == "store-majority":
			bad("shape=store-majority splits the store; split the candidates with shape=halves,among=candidates")
		case peer == "store" || peer == nemesis.TargetStoreLeader:
			bad("peer=%s; use peer=candidates, peer=all or peer=node:cN", peer)
		case shape == "one-way" && peer == "":
			bad("shape=one-way defaults to peer=store; give peer=candidates (or node:cN)")
		case among == "store":
			bad("among=store; use among=candidates")
		case (shape == "majorities-ring" || shape == "bridge") && among == "":
			bad("shape=%s defaults to among=store; give among=candidates", shape)
		}
	}
	return errors.Join(errs...)
}
