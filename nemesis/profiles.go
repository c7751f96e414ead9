package nemesis

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Profile is a named schedule for the common cases.
type Profile struct {
	Name, Doc, Spec string
}

// Paced is the profile's event-paced form (PacedSpec) with {N} for the number of cycles; ""
// = it has none (mixed: its point is the interleaving of independent schedules).
func (p Profile) Paced() string { return paced[p.Name] }

// profiles are expanded by Parse. Durations are TTL multiples so a profile means the same
// thing for every recipe: a pause of 3xTTL always outlives the lease.
var profiles = map[string]Profile{
	"none": {"none", "no faults", ""},
	"pause-leader": {"pause-leader",
		"SIGSTOP the leader for 3xTTL (a GC pause longer than its lease), repeatedly",
		"pause:target=leader,for=3xTTL,every=6xTTL"},
	"freeze-leader": {"freeze-leader",
		"freeze the leader's whole container with the cgroup freezer for 3xTTL (a VM or container stall), repeatedly",
		"freeze:target=leader,for=3xTTL,every=6xTTL"},
	"kill-leader": {"kill-leader",
		"SIGKILL the leader, restart it after 1xTTL, repeatedly",
		"kill:target=leader,for=1xTTL,every=5xTTL"},
	"partition-leader-from-store": {"partition-leader-from-store",
		"cut the leader off from every store node for 3xTTL (silent drops), repeatedly",
		"partition:shape=leader-from-store,mode=drop,for=3xTTL,every=6xTTL"},
	"partition-store-majority": {"partition-store-majority",
		"split the store so its leader lands in the minority, for 3xTTL, repeatedly, on " + leaderStoresWord,
		"partition:shape=store-majority,target=store-leader,mode=drop,for=3xTTL,every=6xTTL"},
	"clock-bump-leader": {"clock-bump-leader",
		"turn the leader's clock back by 3xTTL for 3xTTL (its lease seems to last longer), repeatedly",
		"clock:op=bump,target=leader,delta=-3xTTL,for=3xTTL,every=6xTTL"},
	"loss": {"loss",
		"drop 30% of packets between the leader and the store (both directions), repeatedly",
		"loss:target=leader,peer=store,p=0.3,dir=both,for=3xTTL,every=6xTTL"},
	// Whole-store outages: every store node down for longer than the lease/session TTL, the
	// trigger of published double-leader bugs in ZooKeeper/Curator and etcd client code.
	"all-store-pause": {"all-store-pause",
		"SIGSTOP every store node for 3xTTL (the whole store hangs; connections stay open), repeatedly",
		"pause:target=all-store,for=3xTTL,every=8xTTL"},
	"all-store-freeze": {"all-store-freeze",
		"freeze every store node's container for 3xTTL (a VM or host stall of the whole store), repeatedly",
		"freeze:target=all-store,for=3xTTL,every=8xTTL"},
	"all-store-kill": {"all-store-kill",
		"SIGKILL every store node, restart them after 3xTTL (a store-wide crash longer than the TTL), repeatedly",
		"kill:target=all-store,for=3xTTL,every=10xTTL"},
	// Waiter faults: the follower, not the leader, is hit.
	"pause-follower": {"pause-follower",
		"SIGSTOP a follower (a waiting candidate) for 3xTTL, repeatedly",
		"pause:target=follower,for=3xTTL,every=6xTTL"},
	"kill-follower": {"kill-follower",
		"SIGKILL a follower, restart it after 1xTTL (a waiter in the middle of a queue disappears), repeatedly",
		"kill:target=follower,for=1xTTL,every=5xTTL"},
	"follower-cut-then-kill-leader": {"follower-cut-then-kill-leader",
		"cut a follower off from the store for 3xTTL, heal, then kill the leader 1xTTL later: the waiter that lost its session must not take over unsafely",
		"partition:shape=isolate,target=follower,peer=store,mode=drop,at=1xTTL,for=3xTTL,every=12xTTL,jitter=0s; kill:target=leader,at=5xTTL,for=1xTTL,every=12xTTL,jitter=0s"},
	// Silent vs refused: the same cut, once as hanging requests, once as failing ones.
	"partition-leader-silent": {"partition-leader-silent",
		"cut the leader off from the store with silent drops (requests hang until their own timeouts) for 3xTTL, repeatedly; pair of partition-leader-refused",
		"partition:shape=leader-from-store,mode=drop,for=3xTTL,every=6xTTL"},
	"partition-leader-refused": {"partition-leader-refused",
		"cut the leader off from the store with refusals (TCP resets: requests fail at once) for 3xTTL, repeatedly; pair of partition-leader-silent",
		"partition:shape=leader-from-store,mode=reject,for=3xTTL,every=6xTTL"},
	// Clock rate on candidates (their clock-offset file carries the rate).
	"clock-slow-leader": {"clock-slow-leader",
		"the leader's clock file runs at half speed for 3xTTL (a lease deadline it takes from that file comes late; its timers and client libraries are not slowed), repeatedly",
		"clock:op=rate,rate=0.5,target=leader,for=3xTTL,every=6xTTL"},
	"clock-fast-follower": {"clock-fast-follower",
		"a follower's clock file runs at twice real speed for 3xTTL (a lease it judges on that file seems to run out early; its timers and client libraries are not sped up), repeatedly",
		"clock:op=rate,rate=2,target=follower,for=3xTTL,every=6xTTL"},
	// Slow store connections through the fault proxy.
	"delay-leader": {"delay-leader",
		"add 1xTTL of latency each way to the leader's store connections for 4xTTL (a renewal round trip takes 2xTTL), repeatedly",
		"delay:target=leader,latency=1xTTL,dir=both,for=4xTTL,every=8xTTL"},
	"half-open-leader": {"half-open-leader",
		"the leader's store connections stay open but carry nothing for 3xTTL (a silent middlebox or a dead peer the kernel has not noticed): requests hang until the candidate's own timeouts, repeatedly; pair of reset-leader",
		"half-open:target=leader,for=3xTTL,every=6xTTL"},
	"reset-leader": {"reset-leader",
		"every request of the leader to the store is answered with a torn-down connection for 3xTTL (new connections too): requests fail at once, repeatedly; pair of half-open-leader",
		"reset:target=leader,for=3xTTL,every=6xTTL"},
	"bandwidth-leader": {"bandwidth-leader",
		"the leader's store connections pass 1 KB/s each way for 4xTTL (a saturated link), repeatedly",
		"bandwidth:target=leader,rate=1,dir=both,for=4xTTL,every=8xTTL"},
	"slow-close-kill-leader": {"slow-close-kill-leader",
		"the candidates' closes reach the store 3xTTL late, and the leader is killed meanwhile: the store keeps the dead leader's connection (and any session lock on it) for 3xTTL",
		"slow-close:target=all-candidates,close-delay=3xTTL,dir=out,at=1xTTL,for=6xTTL,every=10xTTL,jitter=0s; kill:target=leader,at=2xTTL,for=1xTTL,every=10xTTL,jitter=0s"},
	// Fence device faults (docs/faults.md "Fence device faults"): the leader is paused past
	// its lease so a STONITH successor must fence it, and the device is broken from the
	// pause's start for 6xTTL, while the successor asks. The pause (5xTTL) outlasts the
	// successor's election; fence-lying's lag (6xTTL from the acknowledgement) outlasts the
	// pause, so the paused leader wakes while its successor already acts.
	"fence-unreachable-pause-leader": {"fence-unreachable-pause-leader",
		"pause the leader for 5xTTL while the fence device answers nothing for 6xTTL: a STONITH successor must not act unfenced, repeatedly",
		"pause:target=leader,at=1xTTL,for=5xTTL,every=14xTTL,jitter=0s; fence-unreachable:target=all-candidates,at=1xTTL,for=6xTTL,every=14xTTL,jitter=0s"},
	"fence-slow-pause-leader": {"fence-slow-pause-leader",
		"pause the leader for 5xTTL while the fence device carries out and answers every request 3xTTL late for 6xTTL (past a 2xTTL fence timeout), repeatedly",
		"pause:target=leader,at=1xTTL,for=5xTTL,every=18xTTL,jitter=0s; fence-slow:target=all-candidates,delay=3xTTL,at=1xTTL,for=6xTTL,every=18xTTL,jitter=0s"},
	"fence-lying-pause-leader": {"fence-lying-pause-leader",
		"pause the leader for 5xTTL while the fence device answers a power-off \"off\" at once and kills 6xTTL later (for 6xTTL): a successor that trusts the answer acts beside the woken leader, repeatedly",
		"pause:target=leader,at=1xTTL,for=5xTTL,every=14xTTL,jitter=0s; fence-lying:target=all-candidates,lag=6xTTL,at=1xTTL,for=6xTTL,every=14xTTL,jitter=0s"},
	"mixed": {"mixed",
		"leader pause, leader partition and leader clock bump plus a random candidate kill, interleaved at seeded offsets",
		"pause:target=leader,for=3xTTL,every=16xTTL; kill:target=random-candidate,for=1xTTL,every=16xTTL; partition:shape=leader-from-store,for=3xTTL,every=16xTTL; clock:op=bump,target=leader,delta=-3xTTL,for=2xTTL,every=16xTTL"},
}

// paced are the profiles' event-paced forms: each cycle starts on a leader's third write
// (counted from its election or the last heal, so a cycle begins once the recipe is back at
// work), every occurrence ends inside the phase, and count= makes the number of cycles, not
// the clock, decide how much is tested. Chains start their second fault on the first one's
// fault-start or fault-end. With --until the phase ends when the cycles are done.
var paced = map[string]string{
	"pause-leader":                "pause:target=leader,on=write:3,for=3xTTL,count={N}",
	"freeze-leader":               "freeze:target=leader,on=write:3,for=3xTTL,count={N}",
	"kill-leader":                 "kill:target=leader,on=write:3,for=1xTTL,count={N}",
	"partition-leader-from-store": "partition:shape=leader-from-store,mode=drop,on=write:3,for=3xTTL,count={N}",
	"partition-store-majority":    "partition:shape=store-majority,target=store-leader,mode=drop,on=write:3,for=3xTTL,count={N}",
	"clock-bump-leader":           "clock:op=bump,target=leader,delta=-3xTTL,on=write:3,for=3xTTL,count={N}",
	"loss":                        "loss:target=leader,peer=store,p=0.3,dir=both,on=write:3,for=3xTTL,count={N}",
	"all-store-pause":             "pause:target=all-store,on=write:3,for=3xTTL,count={N}",
	"all-store-freeze":            "freeze:target=all-store,on=write:3,for=3xTTL,count={N}",
	"all-store-kill":              "kill:target=all-store,on=write:3,for=3xTTL,count={N}",
	"pause-follower":              "pause:target=follower,on=write:3,for=3xTTL,count={N}",
	"kill-follower":               "kill:target=follower,on=write:3,for=1xTTL,count={N}",
	// The cut's cooldown covers the whole chain (cut 3, wait 1, kill 1, one TTL to settle):
	// the next cut waits for the kill to heal and the new leader's writes.
	"follower-cut-then-kill-leader": "partition:shape=isolate,target=follower,peer=store,mode=drop,on=write:3,for=3xTTL,every=6xTTL,count={N}; kill:target=leader,on=fault-end,after=1xTTL,for=1xTTL,count={N}",
	"partition-leader-silent":       "partition:shape=leader-from-store,mode=drop,on=write:3,for=3xTTL,count={N}",
	"partition-leader-refused":      "partition:shape=leader-from-store,mode=reject,on=write:3,for=3xTTL,count={N}",
	"clock-slow-leader":             "clock:op=rate,rate=0.5,target=leader,on=write:3,for=3xTTL,count={N}",
	"clock-fast-follower":           "clock:op=rate,rate=2,target=follower,on=write:3,for=3xTTL,count={N}",
	"delay-leader":                  "delay:target=leader,latency=1xTTL,dir=both,on=write:3,for=4xTTL,count={N}",
	"half-open-leader":              "half-open:target=leader,on=write:3,for=3xTTL,count={N}",
	"reset-leader":                  "reset:target=leader,on=write:3,for=3xTTL,count={N}",
	"bandwidth-leader":              "bandwidth:target=leader,rate=1,dir=both,on=write:3,for=4xTTL,count={N}",
	// The fence fault starts with the pause (on its fault-start), so the device is broken when
	// the successor asks; write:3 is a trigger every candidate gives (no private step).
	"fence-unreachable-pause-leader": "pause:target=leader,on=write:3,for=5xTTL,count={N}; fence-unreachable:target=all-candidates,on=fault-start,for=6xTTL,count={N}",
	"fence-slow-pause-leader":        "pause:target=leader,on=write:3,for=5xTTL,count={N}; fence-slow:target=all-candidates,on=fault-start,delay=3xTTL,for=6xTTL,count={N}",
	"fence-lying-pause-leader":       "pause:target=leader,on=write:3,for=5xTTL,count={N}; fence-lying:target=all-candidates,on=fault-start,lag=6xTTL,for=6xTTL,count={N}",
	// The kill follows the slow close's start by a TTL, while closes are held back.
	"slow-close-kill-leader": "slow-close:target=all-candidates,close-delay=3xTTL,dir=out,on=write:3,for=6xTTL,count={N}; kill:target=leader,on=fault-start,after=1xTTL,for=1xTTL,count={N}",
}

// MaxCycles bounds --cycles: each cycle is at least a few TTLs of faults.
const MaxCycles = 1000

// PacedSpec is profile name's event-paced form with the given number of cycles.
func PacedSpec(name string, cycles int) (string, error) {
	if cycles < 1 || cycles > MaxCycles {
		return "", fmt.Errorf("--cycles %d: want 1..%d fault cycles", cycles, MaxCycles)
	}
	tmpl, ok := paced[name]
	if !ok {
		var with []string
		for n := range paced {
			with = append(with, n)
		}
		sort.Strings(with)
		if isProfile(name) {
			return "", fmt.Errorf("profile %s has no event-paced form (its faults are placed on a time table on purpose); --cycles works with %s", name, strings.Join(with, ", "))
		}
		return "", fmt.Errorf("--cycles picks a profile's event-paced form, and %q is not a profile: write the triggers yourself (on=EVENT,count=N) and end the phase with --until; profiles with a paced form: %s", name, strings.Join(with, ", "))
	}
	return strings.ReplaceAll(tmpl, "{N}", strconv.Itoa(cycles)), nil
}

// HasPaced reports whether name is a profile with an event-paced form.
func HasPaced(name string) bool {
	_, ok := paced[name]
	return ok
}

func isProfile(name string) bool {
	_, ok := profiles[name]
	return ok
}

// ProfileNames lists the profiles, sorted.
func ProfileNames() []string {
	out := make([]string, 0, len(profiles))
	for n := range profiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Profiles lists the profiles with their expansion, sorted by name.
func Profiles() []Profile {
	var out []Profile
	for _, n := range ProfileNames() {
		p := profiles[n]
		p.Doc = withLeaderStores(p.Doc)
		out = append(out, p)
	}
	return out
}
