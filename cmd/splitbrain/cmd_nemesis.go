package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/libraries"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

func init() {
	register(command{name: "nemesis", summary: "list fault kinds, shapes, targets and profiles; preview a seeded plan", run: runNemesis})
}

const nemesisUsage = `usage:
  splitbrain nemesis list
  splitbrain nemesis plan [--seed N] [--time D] [--store KIND] [--nodes N] [--store-nodes N] [--ttl D] SPEC|PROFILE`

func runNemesis(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return exitUsage, usagef("missing subcommand\n%s", nemesisUsage)
	}
	switch args[0] {
	case "list":
		if err := parseFlags(newFlags("nemesis list", stderr), args[1:], false); err != nil {
			return exitUsage, err
		}
		printNemesisList(stdout)
		return exitValid, nil
	case "plan":
		return runNemesisPlan(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, nemesisUsage)
		return exitValid, nil
	}
	return exitUsage, usagef("unknown nemesis subcommand %q\n%s", args[0], nemesisUsage)
}

func printNemesisList(w io.Writer) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT KINDS (spec: KIND:key=value,...; join faults with ';' or '+'; @FILE reads one per line)")
	for _, k := range nemesis.Kinds() {
		fmt.Fprintf(tw, "  %s\t%s (default target %s, for=%s)\n", k.Name, k.Summary, orDash(k.DefaultTarget), k.DefaultFor)
		fmt.Fprintf(tw, "    \thits: %s%s\n", joinClasses(k.Classes), kindEffects(k))
		for _, p := range k.Params {
			def := ""
			if p.Default != "" {
				def = " [default " + p.Default + "]"
			}
			fmt.Fprintf(tw, "    %s=\t%s%s\n", p.Key, p.Doc, def)
		}
	}
	fmt.Fprintln(tw, "  every kind also takes:\ttarget= for= every= at= jitter= count= on= after= (durations: Go syntax like 6s, or NxTTL)")
	unsupported := nemesis.Unsupported()
	for _, k := range sortedNames(unsupported) {
		fmt.Fprintf(tw, "  %s\tNOT SUPPORTED: %s\n", k, unsupported[k])
	}
	fmt.Fprintln(tw, "\nTARGETS (live ones are resolved when the fault starts; seeded ones come from --seed)")
	for _, t := range nemesis.Targets() {
		fmt.Fprintf(tw, "  %s\t%s\n", t.Name, t.Doc)
	}
	fmt.Fprintln(tw, "\nTRIGGERS (on=EVENT: start on an event instead of a time, e.g. pause:target=leader,on=elected,after=30ms,for=3xTTL)")
	for _, t := range nemesis.TriggerEvents() {
		fmt.Fprintf(tw, "  on=%s\t%s\n", t.Name, t.Doc)
	}
	fmt.Fprintln(tw, "  after=\tdelay from the event to the fault's start (>= 0, default 0)")
	fmt.Fprintln(tw, "  target\twith a candidate's event the fault hits that candidate (target=leader or trigger, the default); other targets resolve as usual when it starts")
	fmt.Fprintln(tw, "  every= count=\tevery= is the cooldown between firing events (default 2x(after+for)); count= caps the occurrences; an event fires only while the previous occurrence is over and the new one ends inside the fault phase")
	fmt.Fprintln(tw, "\nPARTITION SHAPES (partition:shape=...)")
	for _, s := range nemesis.Shapes() {
		fmt.Fprintf(tw, "  %s\t%s\n", s.Name, s.Doc)
	}
	fmt.Fprintln(tw, "\nPROFILES (= the time table; paced = the event-paced form that --cycles N and the matrix's cycles: run)")
	for _, p := range nemesis.Profiles() {
		spec := p.Spec
		if spec == "" {
			spec = "(nothing)"
		}
		fmt.Fprintf(tw, "  %s\t%s\n  \t= %s\n", p.Name, p.Doc, spec)
		if paced := p.Paced(); paced != "" {
			fmt.Fprintf(tw, "  \tpaced: %s\n", paced)
		}
	}
	fmt.Fprintln(tw, "\nSTORE SUPPORT")
	fmt.Fprintln(tw, "  store\tpause/freeze/kill\tpartition/loss\tclock skew of the server\tstore-leader\tkinds for this store only")
	for _, s := range stores.Kinds() {
		ok, why := nemesis.ClockSupported(s)
		clock := "yes: " + why
		if !ok {
			clock = "no (" + strings.TrimPrefix(why, "clock skew not supported for this node: ") + ")"
		}
		leader := "no"
		if st, _ := storekinds.Lookup(s); st.HasLeader {
			leader = "yes"
		}
		fmt.Fprintf(tw, "  %s\tyes\tyes\t%s\t%s\t%s\n", s, clock, leader, orDash(strings.Join(storeOnlyKinds(s), ", ")))
	}
	fmt.Fprintln(tw, "  candidates\tyes\tyes\tyes: the clock-offset file of the candidate contract\t-\t-")
	fmt.Fprintln(tw, "  library candidates\tyes\tyes\tthe wall clock only, through libfaketime (op=bump, op=strobe; op=rate refused): CPython, Node, the JVM; not a static Go binary\t-\t-")
	fmt.Fprintln(tw, "\nLIBRARY RECIPES (election libraries run as shipped, docs/libraries.md; --recipe NAME)")
	for _, lib := range libraries.Registry {
		res := "fenced"
		if !lib.Fenced {
			res = "unfenced (no token)"
		}
		img, _ := lib.Image()
		fmt.Fprintf(tw, "  %s\t%s, %s, %s: %s\n", lib.Name, lib.Store, lib.Variant, res, strings.Join(img.Versions, ", "))
	}
	tw.Flush()
	_, netem := nemesis.ProbeNetem()
	fmt.Fprintf(w, "  %s (every store): candidates' store connections through the TCP fault proxy (Toxiproxy); kernel netem probe: %s\n", strings.Join(proxyKinds(), ", "), netem)
}

// storeOnlyKinds are the fault kinds that apply to store kind s only (their traits' Stores).
func storeOnlyKinds(s string) []string {
	var out []string
	for _, k := range nemesis.Kinds() {
		if slices.Contains(k.Stores, s) {
			out = append(out, k.Name)
		}
	}
	return out
}

// proxyKinds are the fault kinds that act through the store fault proxy, from their traits.
func proxyKinds() []string {
	var out []string
	for _, k := range nemesis.Kinds() {
		if k.Proxy {
			out = append(out, k.Name)
		}
	}
	return out
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runNemesisPlan(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("nemesis plan", stderr)
	seed := fs.Int64("seed", 1, "seed for start offsets and target choices")
	phase := fs.Duration("time", time.Minute, "length of the fault phase")
	store := fs.String("store", "etcd", storeFlagHelp())
	cands := fs.Int("nodes", 3, "number of candidates")
	storeNodes := fs.Int("store-nodes", 0, storeNodesFlagHelp())
	ttl := fs.Duration("ttl", 2*time.Second, "lease TTL that NxTTL durations refer to")
	if err := parseFlags(fs, args, true); err != nil {
		return exitUsage, err
	}
	if fs.NArg() != 1 {
		return exitUsage, usagef("want exactly one SPEC or PROFILE argument (quote specs with ';')\n%s", nemesisUsage)
	}
	s, err := nemesis.Parse(fs.Arg(0))
	if err != nil {
		return exitUsage, usageError{err.Error()}
	}
	// The real node names (zk-1, redis-1, ...), so node:NAME targets plan as in a run; a
	// store-less run (none) has candidates only.
	var nodeNames []string
	if *store == storekinds.None {
		if *storeNodes != 0 {
			return exitUsage, usagef("--store-nodes %d: store %s has no nodes; drop --store-nodes", *storeNodes, storekinds.None)
		}
	} else {
		kind, err := stores.ParseKind(*store)
		if err != nil {
			return exitUsage, usagef("--store: %v, or %s", err, storekinds.None)
		}
		if nodeNames, err = stores.NominalNodes(kind, *storeNodes); err != nil {
			return exitUsage, usageError{err.Error()}
		}
	}
	topo := nemesis.Topology{StoreKind: *store, TTL: *ttl, StoreNodes: nodeNames}
	for i := 1; i <= *cands; i++ {
		topo.Candidates = append(topo.Candidates, fmt.Sprintf("c%d", i))
	}
	plan, err := s.Plan(*seed, *phase, topo)
	if err != nil {
		return exitUsage, usageError{err.Error()}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return exitValid, enc.Encode(plan)
}

func joinClasses(cs []nemesis.NodeClass) string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c)+"s")
	}
	return strings.Join(out, ", ")
}

// kindEffects names what a kind changes beyond stopping or starting processes.
func kindEffects(k nemesis.Traits) string {
	var out []string
	if k.Network {
		out = append(out, "network (iptables)")
	}
	if k.Crash {
		out = append(out, "crash (SIGKILL, restart)")
	}
	if k.Clock {
		out = append(out, "clock")
	}
	if k.Proxy {
		out = append(out, "store connections (through the fault proxy, started for such runs)")
	}
	if k.Fence {
		out = append(out, "the run's fence device (only candidates that fence notice)")
	}
	if len(k.Stores) > 0 {
		out = append(out, "only on store "+strings.Join(k.Stores, ", "))
	}
	if len(out) == 0 {
		return ""
	}
	return "; changes: " + strings.Join(out, ", ")
}
