// Package images provides the container images a run needs, in two profiles: "local"
// builds everything offline from a debootstrapped Debian base (no registry is ever asked),
// "official" names the upstream images for machines that can pull them.
//
// Local tags are content hashes under Namespace, so a build is skipped exactly when an image
// with the same inputs already exists. See docs/images.md.
package images

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/images/rootfs"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// Profile selects where images come from.
type Profile string

const (
	ProfileLocal    Profile = "local"
	ProfileOfficial Profile = "official"
)

// EnvProfile names the environment variable that picks the default profile.
const EnvProfile = "SPLITBRAIN_IMAGE_PROFILE"

// Role is what an image is for.
type Role string

const (
	RoleBase Role = rootfs.Role // debootstrapped Debian bookworm minbase (local profile only)
	// A store server's image role is its store kind's name (internal/storekinds): etcd,
	// zookeeper, postgres, redis, dynamodb (dynalite), consul, kubernetes.
	RoleTools     Role = "tools"     // iptables, iproute2, procps: fault-injection sidecars
	RoleCandidate Role = "candidate" // FROM scratch + static splitbrain binary (candidates and the resource)
)

// Roles lists every role a run can ask for, in build order (the base is implied): every
// store kind's roles in declaration order, then tools and candidate.
var Roles = append(storeRoles(), RoleTools, RoleCandidate)

func storeRoles() []Role {
	var out []Role
	for _, d := range storekinds.All() {
		for _, r := range d.Roles() {
			if !slices.Contains(out, Role(r)) {
				out = append(out, Role(r))
			}
		}
	}
	return out
}

// Namespace prefixes every local tag. ".invalid" can never resolve (RFC 2606), so a local
// image can never be pulled by accident.
const Namespace = rootfs.Namespace

// Labels every image built here carries (the base image's, rootfs.ImportChanges, too).
const (
	LabelProject = rootfs.LabelProject // always ProjectName
	LabelRole    = rootfs.LabelRole
	LabelSalt    = "io.splitbrain.salt" // SPLITBRAIN_IMAGE_SALT, on salted builds only
	ProjectName  = rootfs.ProjectName
)

// CandidateBinary is where the candidate image (FROM scratch, dockerfiles/candidate.Dockerfile)
// holds the static splitbrain binary; it is that image's only executable.
const CandidateBinary = "/splitbrain"

// EtcdVersion is the etcd server release built into the local etcd image (pinned in
// internal/images/etcd-server/go.mod) and named by the official profile.
const EtcdVersion = "v3.6.16"

// ConsulVersion is the Consul server release built into the local consul image (pinned in
// internal/images/consul-server/go.mod) and named by the official profile. It is under the
// MPL 2.0; 1.15 and later need submodules (troubleshoot, envoyextensions) the reachable module
// proxy does not serve, so they cannot be built offline here.
const ConsulVersion = "v1.14.5"

// KubernetesVersion is the Kubernetes release whose kube-apiserver and kube-controller-manager
// the local kubernetes image holds (pinned in internal/images/kube-server/go.mod).
const KubernetesVersion = "v1.34.2"

// ParseProfile turns a flag value into a Profile with an error that names the valid ones.
func ParseProfile(s string) (Profile, error) {
	switch Profile(s) {
	case ProfileLocal, ProfileOfficial:
		return Profile(s), nil
	}
	return "", fmt.Errorf("unknown image profile %q: want %q (build offline) or %q (pull upstream images)", s, ProfileLocal, ProfileOfficial)
}

// DefaultProfile is the profile named by SPLITBRAIN_IMAGE_PROFILE, or local when unset.
func DefaultProfile() (Profile, error) {
	v := strings.TrimSpace(os.Getenv(EnvProfile))
	if v == "" {
		return ProfileLocal, nil
	}
	p, err := ParseProfile(v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", EnvProfile, err)
	}
	return p, nil
}

// ParseRole checks one role name.
func ParseRole(s string) (Role, error) {
	r := Role(strings.TrimSpace(s))
	if r == RoleBase {
		return r, nil
	}
	for _, k := range Roles {
		if r == k {
			return r, nil
		}
	}
	names := make([]string, len(Roles))
	for i, k := range Roles {
		names[i] = string(k)
	}
	return "", fmt.Errorf("unknown image role %q: want one of %s (or base)", s, strings.Join(names, ", "))
}

// ParseRoles parses a comma-separated role list; empty means all roles.
func ParseRoles(s string) ([]Role, error) {
	if strings.TrimSpace(s) == "" {
		return append([]Role(nil), Roles...), nil
	}
	var out []Role
	seen := map[Role]bool{}
	for _, part := range strings.Split(s, ",") {
		r, err := ParseRole(part)
		if err != nil {
			return nil, err
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, nil
}

// Set is the resolved image reference per role for one profile, ready to start containers.
type Set map[Role]string

// Result tells what Ensure did for one role.
type Result struct {
	Role     Role
	Ref      string
	Action   string        // "cached", "built", "pulled" or "failed"
	Duration time.Duration // time spent on this role (0 when cached)
	Size     int64         // image size in bytes as the engine reports it
}

// EnsureOptions tunes EnsureWith. The zero value is usable.
type EnsureOptions struct {
	Log         io.Writer // progress lines and build output; nil discards them
	Concurrency int       // role images built at once after the base; 0 means 2
	// Background builds at the lowest CPU weight, so runs going on beside the build keep
	// the cores they need: host commands (go build, debootstrap, npm) under nice 19, the
	// engine's build containers at the minimum cpu-shares.
	Background bool
}

// Ensure makes every listed role's image present (building what is missing in the local
// profile; never pulling in it) and returns their references. No roles means all roles.
func Ensure(ctx context.Context, profile Profile, roles ...Role) (Set, error) {
	set, _, err := EnsureWith(ctx, profile, EnsureOptions{}, roles...)
	return set, err
}

// EnsureWith is Ensure with options, also reporting what was done per role.
func EnsureWith(ctx context.Context, profile Profile, opts EnsureOptions, roles ...Role) (Set, []Result, error) {
	if _, err := ParseProfile(string(profile)); err != nil {
		return nil, nil, err
	}
	if len(roles) == 0 {
		roles = Roles
	}
	for _, r := range roles {
		if _, err := ParseRole(string(r)); err != nil {
			return nil, nil, err
		}
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 2
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Background {
		ctx = context.WithValue(ctx, backgroundKey{}, true)
	}
	b, err := newBuilder(ctx, profile, opts)
	if err != nil {
		return nil, nil, err
	}
	defer b.close()
	return b.ensure(ctx, roles)
}

// backgroundKey marks the context of a background build (EnsureOptions.Background): the
// host commands deep in the build (go build of a server, npm) read it there.
type backgroundKey struct{}

// inBackground reports whether ctx is a background build's.
func inBackground(ctx context.Context) bool {
	b, _ := ctx.Value(backgroundKey{}).(bool)
	return b
}

// niceBackground is the CPU weight of a background build's host commands (nice 19: a
// weight of 15 against a run's 1024 on Linux's scheduler).
const niceBackground = "19"

// hostCommand is exec.CommandContext, under nice in a background build.
func hostCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	if inBackground(ctx) {
		return exec.CommandContext(ctx, "nice", append([]string{"-n", niceBackground, name}, args...)...)
	}
	return exec.CommandContext(ctx, name, args...)
}

// minCPUShares is the engine's smallest cpu-shares (a container's default is 1024).
const minCPUShares = 2
