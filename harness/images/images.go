// Package images provides the container images a run needs, in two profiles: "local"
// builds everything offline from a debootstrapped Debian base (no registry is ever asked),
// "official" names the upstream images for machines that can pull them.
package images

import (
	"context"
	"fmt"
)

// Profile selects where images come from.
type Profile string

const (
	ProfileLocal    Profile = "local"
	ProfileOfficial Profile = "official"
)

// Role is what an image is for.
type Role string

const (
	RoleBase      Role = "base"      // debootstrapped Debian bookworm minbase (local profile only)
	RoleEtcd      Role = "etcd"      // etcd server
	RoleZooKeeper Role = "zookeeper" // ZooKeeper 3.8 server
	RolePostgres  Role = "postgres"  // PostgreSQL 15
	RoleRedis     Role = "redis"     // Redis 7.0
	RoleTools     Role = "tools"     // iptables, iproute2, procps: fault-injection sidecars
	RoleCandidate Role = "candidate" // FROM scratch + static splitbrain binary (candidates and the resource)
)

// Namespace prefixes every local tag. ".invalid" can never resolve (RFC 2606), so a local
// image can never be pulled by accident.
const Namespace = "splitbrain.invalid/"

// ParseProfile turns a flag value into a Profile with an error that names the valid ones.
func ParseProfile(s string) (Profile, error) {
	switch Profile(s) {
	case ProfileLocal, ProfileOfficial:
		return Profile(s), nil
	}
	return "", fmt.Errorf("unknown image profile %q: want %q (build offline) or %q (pull upstream images)", s, ProfileLocal, ProfileOfficial)
}

// Set is the resolved image reference per role for one profile, ready to start containers.
type Set map[Role]string

// Ensure makes every listed role's image present (building what is missing in the local
// profile; never pulling in it) and returns their references.
func Ensure(ctx context.Context, profile Profile, roles ...Role) (Set, error) {
	return nil, fmt.Errorf("images.Ensure: not implemented yet")
}
