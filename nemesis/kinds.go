package nemesis

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// kindDef describes one fault kind. Each kind lives in its own file and registers itself
// with one line in kinds (see register calls in pause.go, kill.go, ...).
type kindDef struct {
	name    string
	summary string
	params  []paramDef
	// defaultTarget and defaultFor apply when the spec leaves target/for out.
	defaultTarget string
	defaultFor    string
	// targets lists the target expressions this kind accepts (node:NAME is always allowed).
	targets []string
	// ownTargets: plan handles the target itself (partition shapes give it other meanings).
	ownTargets bool
	// validate checks combinations of keys at parse time (optional).
	validate func(f *FaultSpec) error
	// plan resolves seeded choices into pf and checks the topology (optional).
	plan func(p *planner, f *FaultSpec, pf *PlannedFault) error
	// apply injects one occurrence. It returns what to undo even when it fails halfway,
	// so a partial fault is still healed.
	apply func(ctx context.Context, n *Nemesis, pf PlannedFault) (*applied, error)
}

type paramDef struct {
	key, doc, def string
	check         func(v string) error
}

// applied is one injected fault: the nodes it hit and how to undo it.
type applied struct {
	targets []string
	// ownTargets: plan handles the target itself (partition shapes give it other meanings).
	ownTargets bool
	heal       func(ctx context.Context) error
	// inEffectT, when set, is when the fault took effect, earlier than apply's return (a
	// SIGKILL is delivered when the kill call returns; Docker notices the exit later).
	inEffectT int64
}

var kinds = map[string]*kindDef{}

func register(k *kindDef) { kinds[k.name] = k }

// unsupportedKinds are faults people ask for that this harness refuses honestly.
var unsupportedKinds = map[string]string{
	"delay":   "this kernel has no netem qdisc (sch_netem), so packet delay cannot be injected honestly; use loss or partition:mode=drop (silent, connections hang) instead",
	"latency": "this kernel has no netem qdisc (sch_netem), so packet delay cannot be injected honestly; use loss or partition:mode=drop (silent, connections hang) instead",
}

// KindNames lists the fault kinds, sorted.
func KindNames() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (k *kindDef) param(key string) (paramDef, bool) {
	for _, p := range k.params {
		if p.key == key {
			return p, true
		}
	}
	return paramDef{}, false
}

func (k *kindDef) keyNames() []string {
	var out []string
	for _, c := range commonKeys {
		out = append(out, c.Key)
	}
	for _, p := range k.params {
		out = append(out, p.key)
	}
	return out
}

// oneOf builds a check that accepts only the listed words.
func oneOf(words ...string) func(string) error {
	return func(v string) error {
		for _, w := range words {
			if v == w {
				return nil
			}
		}
		return fmt.Errorf("want one of %s", strings.Join(words, ", "))
	}
}

const minProbability = 1e-6

func checkProbability(v string) error {
	p, err := strconv.ParseFloat(v, 64)
	// !(p >= min) also refuses NaN; below 1e-6 iptables' six-decimal probability is 0.
	if err != nil || !(p >= minProbability) || p > 1 {
		return fmt.Errorf("want a probability 0 < p <= 1 (at least 0.000001), e.g. 0.3")
	}
	return nil
}

func checkDur(signed bool) func(string) error {
	return func(v string) error {
		d, err := ParseDur(v)
		if err != nil {
			return err
		}
		if !signed && d.negative() {
			return fmt.Errorf("must be >= 0")
		}
		return nil
	}
}

// KindInfo describes a kind for `splitbrain nemesis list` and docs.
type KindInfo struct {
	Name, Summary, DefaultTarget, DefaultFor string
	Targets                                  []string
	Params                                   []ParamInfo
}

// ParamInfo describes one kind-specific key.
type ParamInfo struct{ Key, Doc, Default string }

// Kinds describes every registered kind, sorted by name.
func Kinds() []KindInfo {
	var out []KindInfo
	for _, name := range KindNames() {
		k := kinds[name]
		ki := KindInfo{Name: k.name, Summary: k.summary, DefaultTarget: k.defaultTarget, DefaultFor: k.defaultFor, Targets: k.targets}
		for _, p := range k.params {
			ki.Params = append(ki.Params, ParamInfo{p.key, p.doc, p.def})
		}
		out = append(out, ki)
	}
	return out
}

// Unsupported lists refused kinds with the reason.
func Unsupported() map[string]string {
	out := map[string]string{}
	for k, v := range unsupportedKinds {
		out[k] = v
	}
	return out
}
