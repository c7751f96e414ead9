// Package storekinds declares every store kind once: its name, node layout, image roles,
// whether it elects a leader of its own and whether its servers' clocks can be skewed.
// It imports nothing but the standard library, so the packages that only need these facts
// (nemesis, reports, help texts, the contract) do not link the launchers' client libraries
// (client-go, the AWS SDK, consul/api); internal/stores registers a launcher per kind.
package storekinds

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// The store kinds, the values of SPLITBRAIN_STORE: inside the module a store is named by
// these (a store server's image role too); contract.Store* repeats them for candidates
// written outside it (internal/layers TestOneSpellingOfAStoreName).
const (
	Etcd      = "etcd"
	ZooKeeper = "zookeeper"
	Postgres  = "postgres"
	Redis     = "redis"
	// RedisMulti: N independent Redis servers (no replication), for Redlock.
	RedisMulti = "redis-multi"
	// DynamoDB: one DynamoDB-compatible server (dynalite, in memory).
	DynamoDB = "dynamodb"
	Consul   = "consul"
	// Kubernetes: one kube-apiserver (with etcd and kube-controller-manager behind it).
	Kubernetes = "kubernetes"
	// None is no store at all: candidates elect among themselves over SPLITBRAIN_PEERS. It
	// has no definition (no cluster, no image).
	None = "none"
)

// The kubernetes store's facts a candidate meets (contract.KubeNamespace and
// contract.KubeCandidateGroup for candidates outside the module): the namespace its
// objects live in, and the group its certificate names, which RBAC grants Leases,
// ConfigMaps, Pods (read) and Events.
const (
	KubeNamespace      = "default"
	KubeCandidateGroup = "splitbrain:candidates"
)

// Def is a store kind's definition.
type Def struct {
	Name string
	// Title is how prose names the store ("ZooKeeper", "PostgreSQL").
	Title string
	// DefaultNodes is the node count when none is asked for; MinNodes..MaxNodes the range.
	DefaultNodes, MinNodes, MaxNodes int
	// NodeStem is the node names' stem: "etcd" gives etcd-1..etcd-N; a one-node kind's only
	// node is called by the stem itself.
	NodeStem string
	// Names, when set, are the node names of a fixed topology (nodes of different kinds).
	Names []string
	// HasLeader: the store elects a leader of its own (the store-leader fault target).
	HasLeader bool
	// Volatile: the servers keep their data only in memory (as the project runs them), so a
	// crash-restart comes back empty: locks, leases and counters forgotten.
	Volatile bool
	// ClockSkew: a server's clock can be skewed (libfaketime); ClockHow says how, or why not.
	ClockSkew bool
	ClockHow  string
	// Role is the image role its servers run; MoreRoles are further images its launcher
	// needs (kubernetes: etcd for its storage).
	Role      string
	MoreRoles []string
}

const (
	faketimeFile = "libfaketime with a run-time timestamp file"
	redisClock   = "Redis (linked with jemalloc) fails to start under libfaketime"
)

var (
	mu   sync.RWMutex
	defs = []Def{
		{Name: Etcd, Title: "etcd", Role: Etcd, DefaultNodes: 3, MinNodes: 1, MaxNodes: 7, NodeStem: "etcd", HasLeader: true,
			ClockHow: "etcd is a Go program and ignores libfaketime"},
		{Name: ZooKeeper, Title: "ZooKeeper", Role: ZooKeeper, DefaultNodes: 3, MinNodes: 1, MaxNodes: 7, NodeStem: "zk", HasLeader: true,
			ClockSkew: true, ClockHow: faketimeFile},
		{Name: Postgres, Title: "PostgreSQL", Role: Postgres, DefaultNodes: 1, MinNodes: 1, MaxNodes: 1, NodeStem: "postgres",
			ClockSkew: true, ClockHow: faketimeFile},
		{Name: Redis, Title: "Redis", Role: Redis, DefaultNodes: 1, MinNodes: 1, MaxNodes: 1, NodeStem: "redis",
			Volatile: true, ClockHow: redisClock},
		{Name: RedisMulti, Title: "independent Redis servers (Redlock)", Role: Redis, DefaultNodes: 5, MinNodes: 1, MaxNodes: 9, NodeStem: "redis",
			Volatile: true, ClockHow: redisClock},
		{Name: DynamoDB, Title: "DynamoDB (dynalite)", Role: DynamoDB, DefaultNodes: 1, MinNodes: 1, MaxNodes: 1, NodeStem: "dynamodb",
			Volatile: true, ClockSkew: true, ClockHow: faketimeFile + " (no condition reads the server clock)"},
		{Name: Consul, Title: "Consul", Role: Consul, DefaultNodes: 3, MinNodes: 1, MaxNodes: 7, NodeStem: "consul", HasLeader: true,
			ClockHow: "Consul is a Go program and ignores libfaketime"},
		{Name: Kubernetes, Title: "Kubernetes", Role: Kubernetes, MoreRoles: []string{Etcd}, DefaultNodes: 3, MinNodes: 3, MaxNodes: 3,
			Names:    []string{"etcd", "kube-apiserver", "kube-controller-manager"},
			ClockHow: "etcd, kube-apiserver and kube-controller-manager are Go programs and ignore libfaketime"},
	}
)

// All returns every definition in declaration order.
func All() []Def {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Def, len(defs))
	for i, d := range defs {
		out[i] = d.clone()
	}
	return out
}

// Lookup returns the definition of a kind; ok is false for an unknown kind (and for None).
func Lookup(name string) (Def, bool) {
	mu.RLock()
	defer mu.RUnlock()
	for _, d := range defs {
		if d.Name == name {
			return d.clone(), true
		}
	}
	return Def{}, false
}

// Names lists the kinds that run a cluster, sorted (None is not one of them).
func Names() []string {
	var out []string
	for _, d := range All() {
		out = append(out, d.Name)
	}
	sort.Strings(out)
	return out
}

// Roles are all image roles a kind's servers need, the main one first.
func (d Def) Roles() []string { return append([]string{d.Role}, d.MoreRoles...) }

// NodeNames checks a node count (0 = the default) and returns the node names a cluster of
// that size has. The error names the --store-nodes flag.
func (d Def) NodeNames(n int) ([]string, error) {
	if n == 0 {
		n = d.DefaultNodes
	}
	if n < d.MinNodes || n > d.MaxNodes {
		if d.MinNodes == d.MaxNodes {
			return nil, fmt.Errorf("--store-nodes %d: store %s runs exactly %d node(s); drop --store-nodes", n, d.Name, d.MinNodes)
		}
		return nil, fmt.Errorf("--store-nodes %d: store %s supports %d..%d nodes", n, d.Name, d.MinNodes, d.MaxNodes)
	}
	if d.Names != nil {
		return slices.Clone(d.Names), nil
	}
	if d.MaxNodes == 1 {
		return []string{d.NodeStem}, nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", d.NodeStem, i+1)
	}
	return out, nil
}

// Add registers a kind and returns its removal. It is for tests that show a new kind
// reaches every list (help texts, nemesis list); a real kind is an entry in defs.
func Add(d Def) (remove func()) {
	mu.Lock()
	defer mu.Unlock()
	for _, e := range defs {
		if e.Name == d.Name {
			panic("storekinds: kind " + d.Name + " declared twice")
		}
	}
	defs = append(defs, d.clone())
	return func() {
		mu.Lock()
		defer mu.Unlock()
		defs = slices.DeleteFunc(defs, func(e Def) bool { return e.Name == d.Name })
	}
}

func (d Def) clone() Def {
	d.Names = slices.Clone(d.Names)
	d.MoreRoles = slices.Clone(d.MoreRoles)
	return d
}

// DefaultNodesText describes the default node counts ("etcd 3, zookeeper 3, ..."), for the
// --store-nodes help.
func DefaultNodesText() string {
	var out []string
	for _, name := range Names() {
		d, _ := Lookup(name)
		out = append(out, fmt.Sprintf("%s %d", d.Name, d.DefaultNodes))
	}
	return strings.Join(out, ", ")
}

// Titles names the kinds for prose ("etcd, ZooKeeper, ... and Kubernetes"), in declaration
// order.
func Titles() string {
	var out []string
	for _, d := range All() {
		out = append(out, d.Title)
	}
	if len(out) < 2 {
		return strings.Join(out, "")
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}
