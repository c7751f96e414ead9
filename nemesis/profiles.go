package nemesis

import "sort"

// Profile is a named schedule for the common cases.
type Profile struct {
	Name, Doc, Spec string
}

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
		"split the store so its leader lands in the minority, for 3xTTL, repeatedly (etcd, ZooKeeper, Consul)",
		"partition:shape=store-majority,target=store-leader,mode=drop,for=3xTTL,every=6xTTL"},
	"clock-bump-leader": {"clock-bump-leader",
		"turn the leader's clock back by 3xTTL for 3xTTL (its lease seems to last longer), repeatedly",
		"clock:op=bump,target=leader,delta=-3xTTL,for=3xTTL,every=6xTTL"},
	"loss": {"loss",
		"drop 30% of packets between the leader and the store (both directions), repeatedly",
		"loss:target=leader,peer=store,p=0.3,dir=both,for=3xTTL,every=6xTTL"},
	"mixed": {"mixed",
		"leader pause, leader partition and leader clock bump plus a random candidate kill, interleaved at seeded offsets",
		"pause:target=leader,for=3xTTL,every=16xTTL; kill:target=random-candidate,for=1xTTL,every=16xTTL; partition:shape=leader-from-store,for=3xTTL,every=16xTTL; clock:op=bump,target=leader,delta=-3xTTL,for=2xTTL,every=16xTTL"},
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
		out = append(out, profiles[n])
	}
	return out
}
