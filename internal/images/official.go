package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// officialRefs are the upstream images of the official profile. tools, kubernetes and
// candidate have no upstream image (nothing upstream holds our binary, our fault tools, or
// both Kubernetes servers in one image), so they are built locally there too: tools and
// kubernetes FROM officialToolsParent instead of the debootstrapped base.
var officialRefs = map[Role]string{
	RoleEtcd:      "gcr.io/etcd-development/etcd:" + EtcdVersion,
	RolePostgres:  "postgres:15",
	RoleRedis:     "redis:7.0",
	RoleZooKeeper: "zookeeper:3.8",
	// Not dynalite: the DynamoDB-compatible server AWS publishes (a Java jar, in memory here
	// by its default command), on the same port.
	RoleDynamoDB: "amazon/dynamodb-local:2.5.2",
	RoleConsul:   "hashicorp/consul:" + strings.TrimPrefix(ConsulVersion, "v"),
}

const officialToolsParent = "debian:bookworm-slim"

// OfficialRef is the upstream image of a role in the official profile ("" when the role is
// built locally in both profiles).
func OfficialRef(role Role) string { return officialRefs[role] }

// ensureOfficial pulls missing upstream images (only here, only when missing) and builds
// tools and candidate locally. Untested on the project's machines: they reach no registry.
func (b *builder) ensureOfficial(ctx context.Context, roles []Role) (Set, []Result, error) {
	set := Set{}
	var results []Result
	var errs []error
	for _, role := range roles {
		start := time.Now()
		var res Result
		var err error
		switch role {
		case RoleBase:
			res, err = b.pullIfMissing(ctx, role, officialToolsParent)
		case RoleTools, RoleKubernetes:
			// Kubernetes publishes one image per component; this store runs both from one
			// image, built from the same modules as in the local profile.
			if _, err = b.pullIfMissing(ctx, RoleBase, officialToolsParent); err == nil {
				res, err = b.ensureRole(ctx, role, officialToolsParent)
			}
		case RoleCandidate:
			res, err = b.ensureRole(ctx, role, "")
		default:
			res, err = b.pullIfMissing(ctx, role, officialRefs[role])
		}
		if res.Action == "pulled" {
			res.Duration = time.Since(start)
		}
		results = append(results, res)
		if err != nil {
			results[len(results)-1].Action = "failed"
			errs = append(errs, err)
			continue
		}
		set[role] = res.Ref
	}
	return set, results, errors.Join(errs...)
}

// pullIfMissing pulls ref unless the engine already has it.
func (b *builder) pullIfMissing(ctx context.Context, role Role, ref string) (Result, error) {
	res, ok, err := b.cached(ctx, role, ref)
	if err != nil || ok {
		return res, err
	}
	b.logf("images: pulling %s", ref)
	resp, err := b.cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err == nil {
		err = resp.Wait(ctx)
	}
	if err != nil {
		return res, fmt.Errorf("pull %s for %s (official profile): %w; without registry access use --profile local", ref, role, err)
	}
	info, ok, err := b.inspect(ctx, ref)
	if err != nil || !ok {
		return res, fmt.Errorf("pull %s reported success but the image is not present: %v", ref, err)
	}
	res.Action, res.Size = "pulled", info.Size
	return res, nil
}

// Launch is how a role's image is started; the local images follow the official images'
// conventions, so one launcher works for both profiles.
type Launch struct {
	Entrypoint []string          // nil: keep the image's
	Cmd        []string          // the command (server flags are appended by launchers)
	Env        map[string]string // always-needed environment
	User       string            // "" keeps the image's user
	Ports      []string          // container ports the server listens on
	Notes      string
}

// LaunchFor returns the launch contract of a role in a profile.
func LaunchFor(profile Profile, role Role) Launch {
	switch role {
	case RoleEtcd:
		return Launch{Cmd: []string{"/usr/local/bin/etcd"}, Ports: []string{"2379/tcp", "2380/tcp"},
			Notes: "append etcd flags to Cmd; no libfaketime effect (Go)"}
	case RolePostgres:
		l := Launch{Cmd: []string{"postgres", "-c", "fsync=off"}, Ports: []string{"5432/tcp"},
			Env:   map[string]string{"POSTGRES_HOST_AUTH_METHOD": "trust"},
			Notes: "user postgres, database postgres, trust auth; append -c key=value settings"}
		if profile == ProfileOfficial {
			l.Notes += "; the official image initialises its data directory at first start"
		}
		return l
	case RoleRedis:
		return Launch{Cmd: []string{"redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"},
			Ports: []string{"6379/tcp"}, Notes: "libfaketime does not work with Debian's redis (jemalloc)"}
	case RoleZooKeeper:
		return Launch{Cmd: []string{"zkServer.sh", "start-foreground"}, Ports: []string{"2181/tcp", "2888/tcp", "3888/tcp"},
			Env:   map[string]string{"ZOO_4LW_COMMANDS_WHITELIST": "*"},
			Notes: "set ZOO_MY_ID and ZOO_SERVERS=\"server.1=zk-1:2888:3888;2181 ...\"; JVMFLAGS for JVM options"}
	case RoleDynamoDB:
		if profile == ProfileOfficial { // the image's entrypoint is java
			return Launch{Cmd: []string{"-jar", "DynamoDBLocal.jar", "-inMemory"}, Ports: []string{"8000/tcp"},
				Notes: "DynamoDB Local in memory; any access key and region are accepted"}
		}
		return Launch{Cmd: []string{"node", "/opt/dynalite/server.js"}, Ports: []string{"8000/tcp"},
			Notes: "dynalite " + DynaliteVersion + " in memory; any access key and region are accepted; libfaketime present"}
	case RoleConsul:
		l := Launch{Cmd: []string{"consul", "agent", "-dev", "-client", "0.0.0.0"}, Ports: []string{"8500/tcp", "8300/tcp", "8301/tcp"},
			Notes: "Cmd starting with consul runs as given; data in /consul/data; no libfaketime effect (Go)"}
		if profile == ProfileOfficial {
			l.Notes += "; the official entrypoint runs it as user consul"
		}
		return l
	case RoleKubernetes:
		return Launch{Cmd: []string{"/usr/local/bin/kube-apiserver"}, Ports: []string{"6443/tcp"},
			Notes: "kube-apiserver " + KubernetesVersion + " (also /usr/local/bin/kube-controller-manager); storage is an etcd node; no libfaketime effect (Go)"}
	case RoleTools:
		return Launch{Cmd: []string{"sleep", "infinity"}, Notes: "run with NET_ADMIN and NetworkMode container:<target>; StopSignal is SIGKILL"}
	case RoleCandidate:
		return Launch{Notes: "entrypoint /splitbrain; Cmd is the splitbrain subcommand and its flags"}
	}
	return Launch{}
}
