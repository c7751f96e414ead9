// Package faultkinds holds what every fault kind declares about itself (its Traits), as
// plain data that imports nothing but the standard library. The kinds live in nemesis, one
// file each; table.go here is generated from them (go generate ./nemesis) and a nemesis test
// fails when it is stale. Readers that only need the facts (reports: colours and words)
// read this package instead of linking the nemesis and the Docker client.
package faultkinds

import "sort"

// NodeClass is a class of node a fault can hit.
type NodeClass string

const (
	ClassCandidate NodeClass = "candidate"
	ClassStore     NodeClass = "store"
)

// Traits is what a fault kind declares about itself, once, on its definition. The run
// lifecycle, the store pool, the reports and `splitbrain nemesis list` ask these instead of
// naming kinds.
type Traits struct {
	Name    string
	Summary string
	// DefaultTarget and DefaultFor apply when a spec leaves target/for out ("" target: the
	// kind resolves it itself, e.g. partition shapes).
	DefaultTarget, DefaultFor string
	// Targets lists the target expressions the kind accepts (node:NAME always); nil in a
	// definition means every target of its Classes, and the public view lists those.
	Targets []string
	// Classes are the node classes the kind can hit.
	Classes []NodeClass
	// Stores, when set, are the only store kinds the fault applies to (evict: Pods exist
	// on kubernetes only); a plan for another store is refused.
	Stores []string
	// Network: it changes iptables rules in network namespaces (tools sidecars are
	// prewarmed; a pooled store cluster is checked for leftover rules before reuse).
	Network bool
	// Crash: it kills processes (a signal SIGKILL event per target ends tenures exactly).
	Crash bool
	// Clock: it skews clocks (store servers targeted by it run under libfaketime).
	Clock bool
	// Proxy: it acts on the candidates' store connections through the TCP fault proxy, so
	// a run whose plan has it starts the proxy and points the candidates' endpoints at it.
	Proxy bool
	// Fence: it acts on the run's fence device (SPLITBRAIN_FENCE_URL), so it changes
	// nothing for a candidate that never fences.
	Fence bool
	// Colour is the CSS colour of the kind's bands in reports.
	Colour string
	// Started and Healed are the words an explanation uses for the target ("node c1 was
	// paused", "... resumed").
	Started, Healed string
	// Silences: the target cannot renew a lease while the fault lasts, so a leader it hits
	// is expected to lose leadership after the TTL.
	Silences bool
	Params   []ParamInfo
}

// ParamInfo describes one kind-specific key.
type ParamInfo struct{ Key, Doc, Default string }

// Info returns the traits of a fault kind; ok is false for a kind this build does not know
// (a history written by another version).
func Info(name string) (Traits, bool) {
	for _, t := range table {
		if t.Name == name {
			return t, true
		}
	}
	return Traits{}, false
}

// Kinds describes every fault kind, sorted by name.
func Kinds() []Traits {
	out := append([]Traits(nil), table...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names lists the fault kinds, sorted.
func Names() []string {
	var out []string
	for _, t := range Kinds() {
		out = append(out, t.Name)
	}
	return out
}
