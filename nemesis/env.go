package nemesis

import (
	"context"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/faultproxy"
)

// Env is what the nemesis needs from a live run. The run lifecycle implements it over its
// Docker nodes (harness/procs.go); unit tests implement it with fakes, so every kind's
// apply and heal bookkeeping runs without Docker.
type Env interface {
	// Candidates are the run's candidate nodes (c1..cN); StoreNodes the store cluster's.
	Candidates() []Node
	StoreNodes() []Node
	// StoreKind is a store kind of internal/storekinds, or none.
	StoreKind() string
	// Leaders lists the candidates that currently believe they lead (elected and not
	// stepped down, from the live candidate events) with their tokens.
	Leaders() []Leader
	// StoreLeader names the store node that leads as the store itself reports it (stores
	// whose definition says HasLeader); an error for stores without a leader.
	StoreLeader(ctx context.Context) (string, error)
	// StartSidecar starts a tools container (iptables, iproute2, procps) in target's network
	// namespace with NET_ADMIN, never privileged, labelled with the run.
	StartSidecar(ctx context.Context, target Node) (Sidecar, error)
	// Record appends a nemesis event (fault-start / fault-end, a kill's signal) to the
	// run's history.
	Record(e history.Event) error
}

// Node is one container of the run, as the fault kinds use it.
type Node interface {
	Name() string
	// ID is the container id: a kill(2) checks the host PID's cgroup against it.
	ID() string
	// HostPID is the host PID of the container's PID 1 (an error when it is not running).
	HostPID(ctx context.Context) (int, error)
	// IP is the node's address on the run network.
	IP(ctx context.Context) (string, error)
	State(ctx context.Context) (NodeState, error)
	// Kill sends a signal through the container engine (the fallback when kill(2) of the
	// host PID is not possible).
	Kill(ctx context.Context, signal string) error
	// Start starts the stopped container again (same name, alias and files).
	Start(ctx context.Context) error
	// Freeze and Thaw are the cgroup freezer (docker pause / unpause).
	Freeze(ctx context.Context) error
	Thaw(ctx context.Context) error
	// Exec runs a command inside the node: exit code and combined output.
	Exec(ctx context.Context, cmd []string) (int, string, error)
	// CopyFile writes a file into the node (clock control files).
	CopyFile(ctx context.Context, path string, content []byte, mode int64) error
}

// NodeState is a node's container state.
type NodeState struct {
	Status  string // running, paused, exited, ...
	Running bool
	Paused  bool
}

// Sidecar is a tools container sharing a target's network namespace.
type Sidecar interface {
	Exec(ctx context.Context, cmd []string) (int, string, error)
	Terminate(ctx context.Context) error
}

// Leader is a candidate that believes it leads, with the token it was elected with.
type Leader struct {
	Node  string
	Token int64
}

// PodEnv is implemented by an Env whose candidates live in Pods (store kubernetes; the
// harness plays their node, docs/stores.md).
type PodEnv interface {
	// EvictPod deletes the Pod of candidate while its process keeps running.
	EvictPod(ctx context.Context, candidate string) error
}

// StoreProxyEnv is implemented by an Env whose candidates may reach the store through the
// TCP fault proxy; StoreProxy returns nil when this run's candidates connect directly.
type StoreProxyEnv interface {
	StoreProxy() StoreProxy
}

// StoreProxy is the fault proxy (Toxiproxy) between the candidates and the store. The run
// starts it, with one link per candidate and store endpoint, only when its plan has a fault
// whose kind declares Traits.Proxy; other runs keep direct connections.
type StoreProxy interface {
	// Links names the proxied connections of one candidate (one per store endpoint).
	Links(candidate string) []string
	AddToxic(ctx context.Context, link string, t Toxic) error
	RemoveToxic(ctx context.Context, link, name string) error
	// ToxicNames lists the names of a link's toxics.
	ToxicNames(ctx context.Context, link string) ([]string, error)
}

// Toxic is one Toxiproxy toxic: Type latency, bandwidth, timeout, ...; Stream upstream
// (candidate to store) or downstream; Attributes in Toxiproxy's units (ms, KB/s).
type Toxic = faultproxy.Toxic
