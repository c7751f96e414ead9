package images

import (
	"context"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// roleDef is everything that differs per image role, declared once: a new store's image is
// its Dockerfile (dockerfiles/<role>.Dockerfile, picked by the role's name) plus one entry in
// roleDefs. The role's name is the store kind's (internal/storekinds) for store servers.
type roleDef struct {
	// official is the upstream image of the official profile; "" builds the role locally
	// there too, FROM officialToolsParent (the candidate image FROM scratch).
	official string
	// launch is how the role's image is started in a profile (LaunchFor).
	launch func(Profile) Launch
	// files builds what the role's build context needs besides its Dockerfile and scripts
	// (server binaries, node modules); nil when there is nothing to build.
	files func(ctx context.Context, b *builder) ([]contextFile, error)
}

// roleDefs are the roles' definitions. tools, kubernetes and candidate have no upstream image
// (nothing upstream holds our binary, our fault tools, or both Kubernetes servers in one
// image).
var roleDefs = map[Role]roleDef{
	storekinds.Etcd: {
		official: "gcr.io/etcd-development/etcd:" + EtcdVersion,
		launch: func(Profile) Launch {
			return Launch{Cmd: []string{"/usr/local/bin/etcd"}, Ports: []string{"2379/tcp", "2380/tcp"},
				Notes: "append etcd flags to Cmd; no libfaketime effect (Go)"}
		},
		files: func(ctx context.Context, b *builder) ([]contextFile, error) {
			data, err := buildAndRead(ctx, "go-build-etcd", func() (string, error) { return etcdServer.binary(ctx, b.opts.Log) })
			return []contextFile{{name: "etcd", mode: 0o755, data: data}}, err
		},
	},
	storekinds.ZooKeeper: {
		official: "zookeeper:3.8",
		launch: func(Profile) Launch {
			return Launch{Cmd: []string{"zkServer.sh", "start-foreground"}, Ports: []string{"2181/tcp", "2888/tcp", "3888/tcp"},
				Env:   map[string]string{"ZOO_4LW_COMMANDS_WHITELIST": "*"},
				Notes: "set ZOO_MY_ID and ZOO_SERVERS=\"server.1=zk-1:2888:3888;2181 ...\"; JVMFLAGS for JVM options"}
		},
	},
	storekinds.Postgres: {
		official: "postgres:15",
		launch: func(profile Profile) Launch {
			l := Launch{Cmd: []string{"postgres", "-c", "fsync=off"}, Ports: []string{"5432/tcp"},
				Env:   map[string]string{"POSTGRES_HOST_AUTH_METHOD": "trust"},
				Notes: "user postgres, database postgres, trust auth; append -c key=value settings"}
			if profile == ProfileOfficial {
				l.Notes += "; the official image initialises its data directory at first start"
			}
			return l
		},
	},
	storekinds.Redis: {
		official: "redis:7.0",
		launch: func(Profile) Launch {
			return Launch{Cmd: []string{"redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"},
				Ports: []string{"6379/tcp"}, Notes: "libfaketime does not work with Debian's redis (jemalloc)"}
		},
	},
	storekinds.DynamoDB: {
		// Not dynalite: the DynamoDB-compatible server AWS publishes (a Java jar, in memory here
		// by its default command), on the same port.
		official: "amazon/dynamodb-local:2.5.2",
		launch: func(profile Profile) Launch {
			if profile == ProfileOfficial { // the image's entrypoint is java
				return Launch{Cmd: []string{"-jar", "DynamoDBLocal.jar", "-inMemory"}, Ports: []string{"8000/tcp"},
					Notes: "DynamoDB Local in memory; any access key and region are accepted"}
			}
			return Launch{Cmd: []string{"node", "/opt/dynalite/server.js"}, Ports: []string{"8000/tcp"},
				Notes: "dynalite " + DynaliteVersion + " in memory; any access key and region are accepted; libfaketime present"}
		},
		files: func(ctx context.Context, b *builder) ([]contextFile, error) {
			dir, err := dynaliteModules(ctx, b.opts.Log)
			if err != nil {
				return nil, err
			}
			return dynaliteContext(dir)
		},
	},
	storekinds.Consul: {
		official: "hashicorp/consul:" + strings.TrimPrefix(ConsulVersion, "v"),
		launch: func(profile Profile) Launch {
			l := Launch{Cmd: []string{"consul", "agent", "-dev", "-client", "0.0.0.0"}, Ports: []string{"8500/tcp", "8300/tcp", "8301/tcp"},
				Notes: "Cmd starting with consul runs as given; data in /consul/data; no libfaketime effect (Go)"}
			if profile == ProfileOfficial {
				l.Notes += "; the official entrypoint runs it as user consul"
			}
			return l
		},
		files: func(ctx context.Context, b *builder) ([]contextFile, error) {
			data, err := buildAndRead(ctx, "go-build-consul", func() (string, error) { return consulServer().binary(ctx, b.opts.Log) })
			return []contextFile{{name: "consul", mode: 0o755, data: data}}, err
		},
	},
	storekinds.Kubernetes: {
		// Kubernetes publishes one image per component; this store runs both from one image,
		// built from the same modules in both profiles.
		launch: func(Profile) Launch {
			return Launch{Cmd: []string{"/usr/local/bin/kube-apiserver"}, Ports: []string{"6443/tcp"},
				Notes: "kube-apiserver " + KubernetesVersion + " (also /usr/local/bin/kube-controller-manager); storage is an etcd node; no libfaketime effect (Go)"}
		},
		files: func(ctx context.Context, b *builder) ([]contextFile, error) {
			var out []contextFile
			for _, name := range []string{"kube-apiserver", "kube-controller-manager"} {
				data, err := buildAndRead(ctx, "go-build-"+name, func() (string, error) { return kubeBinary(ctx, b.opts.Log, name) })
				if err != nil {
					return nil, err
				}
				out = append(out, contextFile{name: name, mode: 0o755, data: data})
			}
			return out, nil
		},
	},
	RoleTools: {
		launch: func(Profile) Launch {
			return Launch{Cmd: []string{"sleep", "infinity"}, Notes: "run with NET_ADMIN and NetworkMode container:<target>; StopSignal is SIGKILL"}
		},
	},
	RoleCandidate: {
		launch: func(Profile) Launch {
			return Launch{Notes: "entrypoint /splitbrain; Cmd is the splitbrain subcommand and its flags"}
		},
		files: func(ctx context.Context, b *builder) ([]contextFile, error) {
			data, err := buildAndRead(ctx, "go-build-splitbrain", func() (string, error) { return candidateBinary(ctx, b.opts.Log) })
			return []contextFile{{name: "splitbrain", mode: 0o755, data: data}, {name: "tmp.tar", mode: 0o644, data: tmpDirTar()}}, err
		},
	},
}
