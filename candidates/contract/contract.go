// Package contract holds the names of the candidate contract (docs/candidates.md): the
// environment a candidate process gets and the events it prints. The harness that starts
// candidates and the Go runtime that implements the contract both use these names.
package contract

import "github.com/splitbrain-chaos/splitbrain/internal/storekinds"

// Version of the candidate contract.
const Version = 1

// Environment variables the harness sets for every candidate.
const (
	EnvNodeID         = "SPLITBRAIN_NODE_ID"         // e.g. "c1"; unique within the run
	EnvStore          = "SPLITBRAIN_STORE"           // a store kind (Stores), or none
	EnvStoreEndpoints = "SPLITBRAIN_STORE_ENDPOINTS" // comma-separated host:port list, reachable from the candidate; not set with store "none"
	EnvResourceURL    = "SPLITBRAIN_RESOURCE_URL"    // base URL of the fenced resource, e.g. http://resource:8080
	EnvLeaseTTL       = "SPLITBRAIN_LEASE_TTL"       // lease/session length, Go duration ("2s")
	EnvWriteInterval  = "SPLITBRAIN_WRITE_INTERVAL"  // leader write interval, Go duration ("50ms")
	// EnvLeaderWork is how long a Go-recipe leader works between checking its lease and
	// sending the write it decided on (default: the write interval, so nearly every moment of
	// a leader's life lies in that gap). Real services do work there; it is where a GC pause
	// falls in the classic zombie-leader case.
	EnvLeaderWork   = "SPLITBRAIN_LEADER_WORK"
	EnvClockFile    = "SPLITBRAIN_CLOCK_OFFSET_FILE" // file holding the clock offset in ns (signed integer)
	EnvElectionName = "SPLITBRAIN_ELECTION"          // election/lock name to use (key prefix, znode path, lock id)
	EnvRecipe       = "SPLITBRAIN_RECIPE"            // recipe name, for Go recipes
	EnvContract     = "SPLITBRAIN_CONTRACT"          // contract version the harness speaks

	// Peer addresses (added in contract 1 without a version change: candidates that do not
	// read them are unaffected). EnvPeers lists every candidate of the run, this one
	// included, as host:port on the run network in node-id order; the host is that
	// candidate's SPLITBRAIN_NODE_ID. The form id=host:port names the id explicitly (tests
	// that run candidates on one machine). EnvListenPort is the port this candidate listens on for
	// its peers. Store-less runs (store "none") need both; the harness sets them in every run.
	EnvPeers      = "SPLITBRAIN_PEERS"
	EnvListenPort = "SPLITBRAIN_LISTEN_PORT"

	// Optional tuning; empty means the recipe's default (derived from the TTL, see docs).
	EnvRenewInterval = "SPLITBRAIN_RENEW_INTERVAL" // how often a lease holder renews, Go duration
	EnvRetryInterval = "SPLITBRAIN_RETRY_INTERVAL" // how often a poll-based candidate retries, Go duration

	// Optional credentials for stores that need them (PostgreSQL); empty = the defaults below.
	EnvStoreUser     = "SPLITBRAIN_STORE_USER"
	EnvStorePassword = "SPLITBRAIN_STORE_PASSWORD"
	EnvStoreDatabase = "SPLITBRAIN_STORE_DATABASE"

	// EnvStoreKubeconfig (store kubernetes) is the path of a kubeconfig file in the
	// candidate's container: the API server as this candidate reaches it (directly or
	// through the store fault proxy), the cluster CA, and a client certificate for user
	// SPLITBRAIN_STORE_USER (the node id) in group KubeCandidateGroup, namespace "default".
	EnvStoreKubeconfig = "SPLITBRAIN_STORE_KUBECONFIG"

	// EnvPodName (store kubernetes) names the candidate's own Pod in KubeNamespace, as the
	// downward API's POD_NAME does in a real Deployment. No kubelet runs: the harness creates
	// the Pod (it stays Pending) before every start of the candidate's process, so each
	// process has a Pod of this name with a new UID, and deletes it when the process exits
	// (or when an evict fault hits the candidate). Read the UID from the API server.
	EnvPodName = "SPLITBRAIN_POD_NAME"

	// EnvFenceURL is the base URL of the run's fence device (a power switch for the run's
	// candidates: POST {url}/off/{node}, /on/{node}, GET /status/{node}; docs/candidates.md
	// "The fence device"). Set on every run whose harness could open the device.
	EnvFenceURL = "SPLITBRAIN_FENCE_URL"

	// EnvSplitbrainBin (external candidates: --candidate-cmd, --candidate-image) is the path
	// of a static splitbrain binary in the candidate's container, mounted read-only under
	// SplitbrainBinDir, so an application of one's own can run the project's tools beside it,
	// e.g. the leader-election sidecar (`lease-sidecar`, docs/candidates.md k8s-sidecar).
	EnvSplitbrainBin = "SPLITBRAIN_BIN"
)

// SplitbrainBinDir is where the harness mounts the directory of EnvSplitbrainBin.
const SplitbrainBinDir = "/splitbrain-bin"

// KubeconfigPath is where the harness places a kubernetes candidate's kubeconfig.
const KubeconfigPath = "/splitbrain-kubeconfig"

// KubeNamespace is the namespace the kubernetes recipes keep their objects in.
const KubeNamespace = storekinds.KubeNamespace

// KubeCandidateGroup is the group every kubernetes candidate's certificate names; RBAC
// grants it Leases, ConfigMaps, Pods (read) and Events in every namespace.
const KubeCandidateGroup = storekinds.KubeCandidateGroup

// Credentials used when EnvStoreUser/EnvStoreDatabase are empty (the project's PostgreSQL
// containers trust these on the run network).
const (
	DefaultStoreUser     = "postgres"
	DefaultStoreDatabase = "postgres"
)

// ClockFilePath is where the harness places the clock file in candidate containers: in a
// directory of its own, bind-mounted read-only from the host (a rename there is seen at once).
// Top level, because /splitbrain is the binary itself in the candidate image.
const ClockFilePath = "/splitbrain-clock/offset"

// Store kinds, the values of EnvStore, for candidates written outside this module (inside
// it they are named storekinds.X, declared once in internal/storekinds).
const (
	StoreEtcd      = storekinds.Etcd
	StoreZooKeeper = storekinds.ZooKeeper
	StorePostgres  = storekinds.Postgres
	StoreRedis     = storekinds.Redis
	// StoreRedisMulti: N independent Redis servers (no replication), for Redlock.
	StoreRedisMulti = storekinds.RedisMulti
	StoreDynamoDB   = storekinds.DynamoDB
	StoreConsul     = storekinds.Consul
	// StoreKubernetes: one kube-apiserver (with etcd and kube-controller-manager behind it).
	StoreKubernetes = storekinds.Kubernetes
	// StoreNone: no coordination store; candidates elect among themselves over
	// SPLITBRAIN_PEERS (raft, bully, ring).
	StoreNone = storekinds.None
)

// Stores lists the store kinds in a stable order (declaration order, none last), for error
// messages.
var Stores = storeNames()

func storeNames() []string {
	var out []string
	for _, d := range storekinds.All() {
		out = append(out, d.Name)
	}
	return append(out, StoreNone)
}

// DefaultPeerPort is the port the harness gives every candidate for peer traffic.
const DefaultPeerPort = 7000

// Defaults for the optional variables (docs/candidates.md states the same values).
const (
	DefaultLeaseTTL      = "2s"
	DefaultWriteInterval = "50ms"
	DefaultElectionName  = "splitbrain"
)

// Stepped-down reasons every candidate should use where they apply; recipes add their own.
const (
	ReasonSIGTERM = "sigterm" // graceful resignation on SIGTERM
)

// Clock declarations: a candidate that honours the clock-offset file says so with
// "clock":"offset-file" on its campaigning events; without it, clock faults on that node are
// reported as not applicable.
const ClockOffsetFile = "offset-file"
