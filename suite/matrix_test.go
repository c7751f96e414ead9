package suite

import (
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/libraries"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

const okRow = `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, fault: kill-leader, tags: [smoke], expect: {verdict: valid}}
`

func TestParseRejects(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown top key", "bogus: 1\n" + okRow, "field bogus not found"},
		{"unknown row key", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, colour: red, tags: [smoke], expect: {verdict: valid}}`, "field colour not found"},
		{"unknown store", `
defaults: {duration: 10s}
rows:
  - {store: mysql, recipe: etcd-election, tags: [smoke], expect: {verdict: valid}}`, `unknown store "mysql": want one of consul, dynamodb, etcd, kubernetes, postgres, redis, redis-multi, zookeeper`},
		{"unknown recipe", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: paxos, tags: [smoke], expect: {verdict: valid}}`, `unknown recipe "paxos": want one of`},
		{"recipe on wrong store", `
defaults: {duration: 10s}
rows:
  - {store: redis, recipe: etcd-election, tags: [smoke], expect: {verdict: valid}}`, `recipe "etcd-election" runs on etcd, not redis`},
		{"unknown profile", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, fault: pause-everything, tags: [smoke], expect: {verdict: valid}}`, `unknown fault profile "pause-everything": want none or one of`},
		{"bad spec", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, fault: "pause:for=banana", tags: [smoke], expect: {verdict: valid}}`, `fault "pause:for=banana"`},
		{"handoff bound without handoffs", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, fault: none, until: writes=10, tags: [smoke], expect: {verdict: valid, handoff_max: derived}}`, "expect.handoff_max needs workload: handoff"},
		{"unknown verdict", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, tags: [smoke], expect: {verdict: unknown}}`, `expect.verdict "unknown"`},
		{"missing verdict", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, tags: [smoke]}`, `no expect.verdict`},
		{"unknown tag", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, tags: [weekly], expect: {verdict: valid}}`, `unknown tag "weekly"`},
		{"no duration", `
rows:
  - {store: etcd, recipe: etcd-election, tags: [smoke], expect: {verdict: valid}}`, `no duration`},
		{"unknown resource", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, resource: half, tags: [smoke], expect: {verdict: valid}}`, `unknown resource mode "half"`},
		{"unknown workload", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, workload: burst, tags: [smoke], expect: {verdict: valid}}`, `unknown workload "burst"`},
		{"duplicate", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, tags: [smoke], expect: {verdict: valid}}
  - {store: etcd, recipe: etcd-election, fault: none, tags: [nightly], expect: {verdict: valid}}`, `also row 1's`},
		{"bound without fault", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, tags: [smoke], expect: {verdict: valid, failover_max: 3s}}`, `failover_max needs a fault`},
		{"reasons on valid", `
defaults: {duration: 10s}
rows:
  - {store: etcd, recipe: etcd-election, tags: [smoke], expect: {verdict: valid, reasons: [leader-overlap]}}`, `list verdict-neutral codes under expect.findings`},
		{"bad duration", `
defaults: {duration: ten}
rows: []`, `ten`},
		{"unknown tier", "tiers: {weekly: {duration: 1s}}\n" + okRow, `unknown tier "weekly"`},
		{"empty", ``, `the matrix is empty`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), "m.yaml")
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "m.yaml") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestSelectLayersAndNames(t *testing.T) {
	m, err := Parse([]byte(`
defaults: {ttl: 3s, duration: 20s, warmup: 2s, seeds: [7]}
tiers: {nightly: {duration: 60s, recovery: 9s}}
rows:
  - {store: etcd, recipe: etcd-election, fault: kill-leader, tags: [smoke], expect: {verdict: valid}}
  - {store: redis, recipe: redis-setnx, fault: pause-leader, resource: unfenced, duration: 5s, seeds: [1, 2], tags: [default],
     expect: {verdict: invalid, reasons: [stale-write-accepted]}}
  - {name: x/y, store: redis, recipe: naive-lease, workload: handoff, tags: [smoke], expect: {verdict: invalid}}
`), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	smoke, err := m.Select(TierSmoke, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := caseNames(smoke); !slices.Equal(got, []string{"etcd/etcd-election/kill-leader", "x/y"}) {
		t.Fatalf("smoke = %v", got)
	}
	c := smoke[0].Config
	if c.TTL != 3*time.Second || c.FaultTime != 20*time.Second || c.Warmup != 2*time.Second ||
		c.Recovery != harness.DefaultRecovery || c.Seed != 7 || c.Nemesis != "kill-leader" || c.Nodes != 3 {
		t.Errorf("smoke config not layered: %+v", c)
	}
	if smoke[1].Config.Workload != "handoff" || smoke[1].Config.TestName != "x--y" {
		t.Errorf("named row config: %+v", smoke[1].Config)
	}
	night, _ := m.Select(TierNightly, "")
	if got := caseNames(night); len(got) != 4 || got[1] != "redis/redis-setnx/pause-leader/unfenced/seed=1" {
		t.Fatalf("nightly = %v", got)
	}
	if night[0].Config.FaultTime != 60*time.Second || night[0].Config.Recovery != 9*time.Second {
		t.Errorf("tier did not override defaults: %+v", night[0].Config)
	}
	if night[1].Config.FaultTime != 5*time.Second || night[1].Config.ResourceMode != "unfenced" {
		t.Errorf("row did not override tier: %+v", night[1].Config)
	}
	if night[1].Planned() != 2*time.Second+5*time.Second+9*time.Second {
		t.Errorf("planned %v", night[1].Planned())
	}
	for _, cs := range night {
		cfg := cs.Config
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: harness rejects the config: %v", cs.Name, err)
		}
	}
	f, _ := m.Select(TierNightly, "seed=2$")
	if got := caseNames(f); !slices.Equal(got, []string{"redis/redis-setnx/pause-leader/unfenced/seed=2"}) {
		t.Errorf("filter = %v", got)
	}
	if _, err := m.Select("weekly", ""); err == nil {
		t.Error("unknown tier accepted")
	}
	if _, err := m.Select(TierSmoke, "("); err == nil || !strings.Contains(err.Error(), "regular expression") {
		t.Errorf("bad filter: %v", err)
	}
}

func caseNames(cs []Case) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func results(verdict checkers.Verdict) *checkers.Results {
	return &checkers.Results{Verdict: verdict}
}

func TestCompare(t *testing.T) {
	yes, no := true, false
	res := results(checkers.Invalid)
	res.Reasons = []checkers.Reason{{Code: "stale-write-accepted", Severity: checkers.SevInvalid}}
	res.Findings = []checkers.Reason{{Code: "stale-write-rejected"}, {Code: "leader-overlap"}}
	res.Tenures.OverlapCount = 2
	res.Faults = []checkers.FaultWindow{{ID: 1}, {ID: 2, Error: "no leader"}}
	res.Latency.Samples = []checkers.LatencySample{
		{Outcome: checkers.OutcomeFailover, ElectionNs: int64(3 * time.Second)},
		{Outcome: checkers.OutcomeLeaderKept, ElectionNs: int64(9 * time.Second)},
		{Outcome: checkers.OutcomeFailover, ElectionNs: int64(5 * time.Second)},
		{Outcome: checkers.OutcomeFailover, ElectionNs: int64(4 * time.Second)},
	}
	o := Observe("invalid", res)
	if o.MedianFailover() != 4*time.Second || o.MaxFailover() != 5*time.Second || o.FaultsApplied != 1 {
		t.Fatalf("observed %+v", o)
	}
	if d := Compare(Expect{Verdict: "invalid", FailoverMax: 5 * time.Second, Overlap: &yes,
		Reasons: []string{"stale-write-accepted"}, Findings: []string{"stale-write-rejected"}}, true, o); len(d) != 0 {
		t.Errorf("match reported as %v", d)
	}
	d := Compare(Expect{Verdict: "valid", FailoverMax: 4 * time.Second, Overlap: &no,
		Reasons: []string{"token-not-monotone"}, Findings: []string{"unavailable-beyond-bound"}}, true, o)
	for _, want := range []string{"verdict invalid, expected valid", "exceeds the bound 4s", "2 belief overlap windows",
		"reason token-not-monotone missing", "finding unavailable-beyond-bound missing"} {
		if !containsSub(d, want) {
			t.Errorf("diffs %q lack %q", d, want)
		}
	}
	none := Observe("valid", results(checkers.Valid))
	if d := Compare(Expect{Verdict: "valid"}, true, none); !containsSub(d, "no fault was applied") {
		t.Errorf("faulty row without faults not flagged: %v", d)
	}
	if d := Compare(Expect{Verdict: "valid", Overlap: &no}, false, none); len(d) != 0 {
		t.Errorf("fault-free match reported as %v", d)
	}
	missing := Observe("unknown", nil)
	if d := Compare(Expect{Verdict: "valid", Overlap: &no}, false, missing); len(d) != 2 || !containsSub(d, "no results.json") {
		t.Errorf("missing results: %v", d)
	}

	// The leader was hit but nobody took over: a failover bound proved nothing.
	kept := results(checkers.Valid)
	kept.Faults = []checkers.FaultWindow{{ID: 1}}
	kept.Latency.Samples = []checkers.LatencySample{{FaultID: 1, TouchedLeader: true, Outcome: checkers.OutcomeLeaderKept, ElectionNs: -1}}
	if d := Compare(Expect{Verdict: "valid", FailoverMax: 7 * time.Second}, true, Observe("valid", kept)); !containsSub(d, "no failover was measured") {
		t.Errorf("untested failover bound not flagged: %v", d)
	}
	// Near miss: the fault did not hit the leader (a store-side fault it rode out).
	kept.Latency.Samples[0].TouchedLeader = false
	if d := Compare(Expect{Verdict: "valid", FailoverMax: 7 * time.Second}, true, Observe("valid", kept)); len(d) != 0 {
		t.Errorf("fault that missed the leader flagged: %v", d)
	}

	// Handoffs are bounded apart from failovers: SIGTERM of the leader → next election.
	ho := results(checkers.Valid)
	ho.Latency.Samples = []checkers.LatencySample{
		{Kind: "handoff", Outcome: checkers.OutcomeFailover, ElectionNs: int64(300 * time.Millisecond)},
		{Kind: "handoff", Outcome: checkers.OutcomeFailover, ElectionNs: int64(2 * time.Second)},
	}
	oh := Observe("valid", ho)
	if len(oh.Failovers) != 0 || len(oh.Handoffs) != 2 {
		t.Fatalf("handoffs counted as failovers: %+v", oh)
	}
	if d := Compare(Expect{Verdict: "valid", HandoffMax: 2 * time.Second}, false, oh); len(d) != 0 {
		t.Errorf("handoffs within the bound flagged: %v", d)
	}
	if d := Compare(Expect{Verdict: "valid", HandoffMax: time.Second}, false, oh); !containsSub(d, "slowest handoff 2s exceeds the bound 1s") {
		t.Errorf("slow handoff not flagged: %v", d)
	}
	if d, notes := CompareTolerant(Expect{Verdict: "valid", HandoffMax: time.Second}, false, oh, SmokeBoundTolerance); len(d) != 0 || len(notes) != 1 {
		t.Errorf("an overrun within 3x in smoke: diffs %v notes %v", d, notes)
	}
	if d := Compare(Expect{Verdict: "valid", HandoffMax: time.Second}, false, Observe("valid", results(checkers.Valid))); !containsSub(d, "no handoff was measured") {
		t.Errorf("untested handoff bound not flagged: %v", d)
	}
}

func containsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func TestTableAndJUnit(t *testing.T) {
	m, err := Parse([]byte(okRow), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := m.Select(TierSmoke, "")
	ok := Result{Case: cs[0], Observed: Observe("valid", results(checkers.Valid)), Wall: 40 * time.Second}
	ok.Observed.Failovers = []time.Duration{1500 * time.Millisecond}
	bad := Result{Case: cs[0], Observed: Observe("unknown", nil), Diffs: []string{"verdict unknown, expected valid"}, Wall: 20 * time.Second}
	harm := Result{Case: cs[0], Err: errors.New("setup: boom"), Diffs: []string{"harness error: setup: boom"}, Wall: time.Second}
	var b strings.Builder
	WriteTable(&b, []Result{ok, bad, harm})
	out := b.String()
	for _, want := range []string{"row", "expected", "failover", "1.5s", "✓", "✗ verdict unknown, expected valid", "1/3 rows as expected"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Planned = 5s warmup + 10s + 10s recovery (harness defaults): 40s wall = 15s overhead.
	if ov := ok.Overhead(); ov != 15*time.Second {
		t.Errorf("overhead %v", ov)
	}
	path := filepath.Join(t.TempDir(), "j", "junit.xml")
	if err := WriteJUnit(path, "matrix", []Result{ok, bad, harm}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	var doc struct { // what CI readers see
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Errors   int `xml:"errors,attr"`
			Cases    []struct {
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Suites[0]
	if s.Tests != 3 || s.Failures != 1 || s.Errors != 1 || s.Cases[0].Failure != nil || s.Cases[1].Failure == nil || s.Cases[2].Error == nil {
		t.Errorf("junit: %s", raw)
	}
}

// isolateLeader stands for "the leader cut off from every peer" in the coverage rule of
// store-less recipes: a partition of shape isolate aimed at the leader.
const isolateLeader = "isolate-leader"

// pausesLeader: the fault SIGSTOPs the leader (the pause-leader profile or a pause spec of
// its own; a pause without a target pauses the leader).
func pausesLeader(fault string) bool {
	sched, err := nemesis.Parse(fault)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(sched.Faults, func(f nemesis.FaultSpec) bool {
		return f.Kind == "pause" && (f.Target == "" || f.Target == nemesis.TargetLeader)
	})
}

// faultIs reports whether a row's fault is want; isolateLeader matches any partition spec
// with shape=isolate that targets the leader.
func faultIs(fault, want string) bool {
	if fault == want {
		return true
	}
	sched, err := nemesis.Parse(fault)
	if err != nil {
		return false
	}
	leader := func(f nemesis.FaultSpec) bool { return f.Target == "" || f.Target == nemesis.TargetLeader }
	switch want {
	case isolateLeader:
		return slices.ContainsFunc(sched.Faults, func(f nemesis.FaultSpec) bool {
			return f.Kind == "partition" && f.Params["shape"] == "isolate" && leader(f)
		})
	case "pause-leader":
		// The profile's fault written out, e.g. placed on the leader's work step.
		return slices.ContainsFunc(sched.Faults, func(f nemesis.FaultSpec) bool {
			return f.Kind == "pause" && leader(f) && (f.Params["process"] == "" || f.Params["process"] == "all")
		})
	}
	return false
}

// TestMatrixFile checks the shipped matrix loads and covers what issue 7 demands.
func TestMatrixFile(t *testing.T) {
	m, err := Load("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := m.Select(TierNightly, "")
	smoke, _ := m.Select(TierSmoke, "")
	def, _ := m.Select(TierDefault, "")
	has := func(cs []Case, match func(Case) bool) bool { return slices.ContainsFunc(cs, match) }
	for _, spec := range candidates.Registry.Infos() {
		if _, ok := libraries.Lookup(spec.Name); ok {
			// A library run as shipped is judged, not required to pass: its rows state what it
			// did (docs/libraries.md). It needs a measured row under a paused leader, and the
			// default tier's row (below) for the leaderboard.
			if !has(all, func(c Case) bool { return c.Row.Recipe == spec.Name && pausesLeader(c.Row.Fault) }) {
				t.Errorf("library recipe %s has no row under a paused leader", spec.Name)
			}
			continue
		}
		// Every recipe, the wrong ones too, is valid without faults and handoffs.
		if !has(all, func(c Case) bool {
			return c.Row.Recipe == spec.Name && c.Row.Fault == "none" && c.Row.Workload != "handoff" && c.Row.Expect.Verdict == "valid"
		}) {
			t.Errorf("no fault-free valid row for recipe %s", spec.Name)
		}
		if spec.Negative {
			if !has(smoke, func(c Case) bool { return c.Row.Recipe == spec.Name && c.Row.Expect.Verdict == "invalid" }) {
				t.Errorf("negative control %s has no invalid smoke row", spec.Name)
			}
			continue
		}
		faults := []string{"kill-leader", "pause-leader", "partition-leader-from-store"}
		if st, _ := storekinds.Lookup(spec.Store); st.HasLeader { // etcd, ZooKeeper, Consul
			faults = append(faults, "partition-store-majority")
		}
		if spec.Store == storekinds.None {
			// No store to cut the leader from: it is cut from its peers instead.
			faults = []string{"kill-leader", "pause-leader", isolateLeader}
		}
		for _, f := range faults {
			if !has(all, func(c Case) bool {
				return c.Row.Recipe == spec.Name && faultIs(c.Row.Fault, f) && c.Config.ResourceMode == "fenced" && c.Row.Expect.Verdict == "valid"
			}) {
				t.Errorf("no fenced valid row for %s under %s", spec.Name, f)
			}
		}
	}
	// Issue 31: a lease recipe's own loss detection, not the fence, must stop its leader
	// before a successor starts. Every recipe with a store runs unfenced under the leader cut
	// from the store, silent and refused (the row states whether it holds: measured); the
	// Kubernetes ones in default, and k8s-lease must hold.
	for _, spec := range candidates.Registry.Infos() {
		if _, lib := libraries.Lookup(spec.Name); spec.Negative || spec.Store == storekinds.None || lib {
			continue
		}
		tier := all
		// k8s-sidecar's cut is a race between the sidecar's detection plus the application's
		// poll and the successor's takeover (docs/candidates.md, k8s-sidecar): measured, stated
		// with miss:, and too slow to settle for the default tier.
		if spec.Store == storekinds.Kubernetes && spec.Name != "k8s-sidecar" {
			tier = def
		}
		for _, f := range []string{"partition-leader-silent", "partition-leader-refused"} {
			row := func(c Case) bool {
				return c.Row.Recipe == spec.Name && c.Row.Fault == f && c.Config.ResourceMode == "unfenced" &&
					(spec.Name != "k8s-lease" || c.Row.Expect.Verdict == "valid")
			}
			if !has(tier, row) {
				t.Errorf("no unfenced row for %s under %s (issue 31)", spec.Name, f)
			}
		}
	}
	if !has(smoke, func(c Case) bool {
		return c.Row.Recipe == "redis-split-incr" && pausesLeader(c.Row.Fault) && c.Row.Expect.Verdict == "invalid" &&
			slices.Contains(c.Row.Expect.Reasons, "token-not-monotone")
	}) {
		t.Error("no smoke row expects redis-split-incr under pause-leader to break token order (token-not-monotone)")
	}
	for _, s := range StoreNames() {
		if !has(smoke, func(c Case) bool { return c.Row.Store == s }) {
			t.Errorf("smoke misses store %s", s)
		}
		if !has(def, func(c Case) bool { return c.Row.Store == s }) {
			t.Errorf("default misses store %s", s)
		}
	}
	// make chaos writes an index whose leaderboard shows every recipe and fault kind.
	for _, spec := range candidates.Registry.Infos() {
		if !has(def, func(c Case) bool { return c.Row.Recipe == spec.Name }) {
			t.Errorf("default misses recipe %s", spec.Name)
		}
	}
	for _, k := range nemesis.KindNames() {
		if _, unsupported := nemesis.Unsupported()[k]; unsupported {
			continue
		}
		hasKind := func(c Case) bool {
			sched, _ := nemesis.Parse(c.Row.Fault)
			return slices.ContainsFunc(sched.Faults, func(f nemesis.FaultSpec) bool { return f.Kind == k })
		}
		// A kind that applies to one store only (evict: kubernetes) is left to the default
		// tier: its rows need that store's slow control plane and CI time is short. So are
		// the fence device's kinds, which only a fencing recipe notices (one of them, the
		// negative control's, is in smoke anyway).
		if info, _ := nemesis.Info(k); !has(smoke, hasKind) && len(info.Stores) == 0 && !info.Fence {
			t.Errorf("smoke misses fault kind %s", k)
		}
		if !has(def, hasKind) {
			t.Errorf("default misses fault kind %s", k)
		}
	}
	// The classic zombie leader: the same recipe under pause-leader, fenced (valid) and
	// unfenced (invalid).
	zombie := func(mode, verdict string) func(Case) bool {
		return func(c Case) bool {
			return pausesLeader(c.Row.Fault) && c.Config.ResourceMode == mode && c.Row.Recipe == "zookeeper-seq" && c.Row.Expect.Verdict == verdict
		}
	}
	if !has(def, zombie("fenced", "valid")) || !has(def, zombie("unfenced", "invalid")) {
		t.Error("default lacks the zombie leader fenced and unfenced")
	}
	if !has(def, func(c Case) bool {
		d, err := candidates.Registry.Lookup(c.Row.Recipe)
		return err == nil && d.Describe().Negative
	}) {
		t.Error("default lacks a negative control")
	}
	if !has(all, func(c Case) bool {
		return c.Row.Recipe == "postgres-advisory" && c.Row.Fault == "pause-leader" && slices.Contains(c.Row.Expect.Findings, "unavailable-beyond-bound")
	}) {
		t.Error("postgres-advisory under pause-leader must show its availability cost as a finding")
	}
	// Known answers by construction: a smoke or default row places its faults on events or
	// states how likely it is to come out otherwise by chance (issue 30).
	for _, c := range append(slices.Clone(smoke), def...) {
		if why := chanceDependent(c); why != "" && (c.Row.Miss == nil || c.Row.Miss.P >= MaxMiss) {
			t.Errorf("%s (%s): %s; place its faults on events (a profile with an event-paced form, on=EVENT,count=N, until:) or state miss: {p: < %g, model: ...}", c.Name, c.Tier, why, MaxMiss)
		}
	}
	for _, c := range all {
		cfg := c.Config
		if c.Row.Candidate != "" {
			cfg.CandidateCmd = c.BuildCandidate()
		}
		if err := harness.CheckConfig(&cfg); err != nil {
			t.Errorf("%s: harness rejects the row: %v", c.Name, err)
		}
	}
}

// chanceDependent says why a case's outcome could depend on the wall clock: a fault placed
// on a time table, or a handoff workload whose count no until: fixes. "" = by construction.
func chanceDependent(c Case) string {
	if why := chanceDependentHandoffs(c); why != "" {
		return why
	}
	if c.Config.Cycles > 0 {
		return ""
	}
	if nemesis.HasPaced(c.Row.Fault) {
		return fmt.Sprintf("profile %s runs its time table: say paced: true (the tier's cycles) or cycles: N", c.Row.Fault)
	}
	if c.Row.Fault == "none" && c.Row.Until == "" {
		return "it has no faults and no until:, so its phase ends on the clock (until: writes=100 ends it on events)"
	}
	sched, err := nemesis.Parse(c.Row.Fault)
	if err != nil {
		return "its fault does not parse: " + err.Error()
	}
	for _, f := range sched.Faults {
		if !f.On.IsSet() {
			return fmt.Sprintf("fault %q is placed on a time table", f.String())
		}
		if f.Count <= 0 {
			return fmt.Sprintf("triggered fault %q has no count=, so how many times it fires depends on the clock", f.String())
		}
	}
	return ""
}

// chanceDependentHandoffs: handoffs on a time table (handoff_every) land wherever the clock
// puts them; event-paced ones (each leader's HandoffWrites-th accepted write) need a phase
// that ends on events, or how many come depends on the machine's speed.
func chanceDependentHandoffs(c Case) string {
	if c.Config.Workload != "handoff" {
		return ""
	}
	if c.Config.HandoffEvery > 0 {
		return fmt.Sprintf("its handoffs come on a time table (handoff_every: %v)", c.Config.HandoffEvery)
	}
	if c.Row.Until == "" {
		return "its handoffs are event-paced but no until: ends the phase on their count (handoffs=N) or on the faults' events"
	}
	return ""
}

// Each way a row can leave its outcome to the clock is named; the matrix file's own rows
// are held to it in TestMatrixFile.
func TestChanceDependent(t *testing.T) {
	cases := []struct{ row, want string }{
		{`{store: etcd, recipe: etcd-election, fault: pause-leader, tags: [smoke], expect: {verdict: valid}}`, "say paced: true"},
		{`{store: etcd, recipe: etcd-election, fault: pause-leader, paced: true, tags: [smoke], expect: {verdict: valid}}`, ""},
		{`{store: etcd, recipe: etcd-election, fault: pause-leader, cycles: 2, tags: [smoke], expect: {verdict: valid}}`, ""},
		{`{store: etcd, recipe: etcd-election, fault: none, tags: [smoke], expect: {verdict: valid}}`, "ends on the clock"},
		{`{store: etcd, recipe: etcd-election, fault: none, until: writes=100, tags: [smoke], expect: {verdict: valid}}`, ""},
		{`{store: etcd, recipe: etcd-election, fault: "pause:target=leader,for=4s,every=8s", until: writes=3, tags: [smoke], expect: {verdict: valid}}`, "time table"},
		{`{store: etcd, recipe: etcd-election, fault: "pause:target=leader,on=write:3,for=4s", until: elections=3, tags: [smoke], expect: {verdict: valid}}`, "has no count="},
		{`{store: etcd, recipe: etcd-election, fault: "pause:target=leader,on=write:3,for=4s,count=1", until: writes=3, tags: [smoke], expect: {verdict: valid}}`, ""},
		{`{store: etcd, recipe: etcd-election, fault: none, workload: handoff, handoff_every: 3s, until: handoffs=2, tags: [smoke], expect: {verdict: valid}}`, "handoff_every: 3s"},
		{`{store: etcd, recipe: etcd-election, fault: none, workload: handoff, tags: [smoke], expect: {verdict: valid}}`, "no until:"},
		{`{store: etcd, recipe: etcd-election, fault: none, workload: handoff, until: handoffs=2, tags: [smoke], expect: {verdict: valid}}`, ""},
	}
	for _, tc := range cases {
		m, err := Parse([]byte("defaults: {duration: 20s}\ntiers: {smoke: {cycles: 1, duration: 60s}}\nrows:\n  - "+tc.row+"\n"), "test.yaml")
		if err != nil {
			t.Fatalf("%s: %v", tc.row, err)
		}
		cs, err := m.Select(TierSmoke, "")
		if err != nil || len(cs) != 1 {
			t.Fatalf("%s: %d cases, %v", tc.row, len(cs), err)
		}
		got := chanceDependent(cs[0])
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.row, got, tc.want)
		}
	}
}

func TestDerivedBoundsAndSmokeTolerance(t *testing.T) {
	m, err := Load("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := m.Select(TierDefault, "^etcd/etcd-election/kill-leader$")
	if len(cs) != 1 {
		t.Fatalf("%d cases", len(cs))
	}
	recipe, err := harness.FailoverBoundFor(cs[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cs[0].Row.Expect.FailoverMax, recipe+FailoverSlack; got != want {
		t.Errorf("derived bound %v, want the recipe's %v plus the slack %v", got, recipe, FailoverSlack)
	}
	part, _ := m.Select(TierNightly, "^etcd/etcd-election/partition-leader-from-store$")
	if len(part) != 1 || part[0].Row.Expect.FailoverMax != recipe+time.Second+FailoverSlack {
		t.Errorf("a partition's bound adds a second of detection: %+v", part)
	}
	e := Expect{Verdict: "valid", FailoverMax: 5 * time.Second}
	o := Observed{Verdict: "valid", HaveResults: true, FaultsApplied: 1, Failovers: []time.Duration{12 * time.Second}}
	if diffs, notes := CompareTolerant(e, true, o, SmokeBoundTolerance); len(diffs) != 0 || len(notes) != 1 {
		t.Errorf("an overrun within 3x in smoke: diffs %v notes %v", diffs, notes)
	}
	if diffs := Compare(e, true, o); len(diffs) != 1 {
		t.Errorf("the same overrun outside smoke must fail: %v", diffs)
	}
	o.Failovers = []time.Duration{16 * time.Second}
	if diffs, _ := CompareTolerant(e, true, o, SmokeBoundTolerance); len(diffs) != 1 {
		t.Errorf("an overrun beyond 3x fails in smoke too: %v", diffs)
	}
}

func TestPoolOrderStartsEachStoreOnce(t *testing.T) {
	m, err := Load("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := m.Select(TierDefault, "")
	order := poolOrder(cs)
	if len(order) != len(cs) {
		t.Fatalf("order has %d of %d cases", len(order), len(cs))
	}
	seen, changes := map[int]bool{}, 0
	stores := map[string]bool{}
	for j, i := range order {
		if seen[i] {
			t.Fatalf("case %d twice", i)
		}
		seen[i] = true
		if j == 0 || cs[order[j-1]].Config.Store != cs[i].Config.Store || cs[order[j-1]].Config.StoreNodes != cs[i].Config.StoreNodes {
			changes++
			k := fmt.Sprint(cs[i].Config.Store, cs[i].Config.StoreNodes)
			if stores[k] {
				t.Errorf("store %s comes back after another store: its cluster would start twice", k)
			}
			stores[k] = true
		}
	}
	if changes != len(stores) {
		t.Errorf("%d store changes for %d clusters", changes, len(stores))
	}
}

// TestPoolOrderLongestFirst: the longest rows start first, as far as the grouping by store
// cluster allows (in file order the Pacemaker rows, a minute each, ran alone at the end).
func TestPoolOrderLongestFirst(t *testing.T) {
	m, err := Load("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := m.Select(TierDefault, "")
	order := poolOrder(cs)
	var longest time.Duration
	for _, c := range cs {
		longest = max(longest, c.Planned())
	}
	if first := cs[order[0]]; first.Planned() != longest {
		t.Errorf("first row %s plans %v; the longest row plans %v", first.Name, first.Planned(), longest)
	}
	for j := 1; j < len(order); j++ {
		a, b := cs[order[j-1]], cs[order[j]]
		if a.Config.Store == b.Config.Store && a.Config.StoreNodes == b.Config.StoreNodes && a.Planned() < b.Planned() {
			t.Errorf("%s (%v) before the longer %s (%v) of the same store cluster", a.Name, a.Planned(), b.Name, b.Planned())
		}
	}
}

// TestPacingAsListed: the listing's classification (matrix --list -v) agrees with the rows:
// no tier (nightly, which runs every row, included) has a time-tabled row (a fault on the
// clock with no stated miss probability), a profile row with cycles lists the triggers it
// fires on (not the profile's time table), and a statistical row lists its miss probability.
func TestPacingAsListed(t *testing.T) {
	m, err := Load("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tier := range Tiers {
		cases, err := m.Select(tier, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(cases) == 0 {
			t.Errorf("tier %s selects no row", tier)
		}
		for _, c := range cases {
			p := c.Pacing()
			switch p {
			case "time-tabled", "unparsed":
				t.Errorf("%s (tier %s): %s: %s", c.Name, tier, p, c.FaultsAsRun())
			case "statistical":
				if !strings.Contains(c.EndText(), "miss p=") {
					t.Errorf("%s: statistical row's end %q lacks its miss probability", c.Name, c.EndText())
				}
			}
			if c.Config.Cycles > 0 && !strings.Contains(c.FaultsAsRun(), "on=") {
				t.Errorf("%s: paced profile %s listed as %q, without its triggers", c.Name, c.Config.Nemesis, c.FaultsAsRun())
			}
		}
	}
	// A nightly-only row on a time table is one the loop above finds (nightly selects every row).
	nm, err := Parse([]byte(`
defaults: {duration: 20s}
rows:
  - {store: etcd, recipe: etcd-election, fault: "pause:target=all-store,for=3xTTL,every=8xTTL", tags: [nightly], expect: {verdict: valid}}
`), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if night, err := nm.Select(TierNightly, ""); err != nil || len(night) != 1 || night[0].Pacing() != "time-tabled" {
		t.Errorf("a nightly-only time-tabled row: %v, %+v", err, night)
	}
	// The classification itself can fail: a time table is one.
	tt := Case{Config: harness.Config{Nemesis: "pause-leader"}}
	if p := tt.Pacing(); p != "time-tabled" {
		t.Errorf("pause-leader without cycles: pacing %q, want time-tabled", p)
	}
	tt.Config.Cycles = 2
	if p := tt.Pacing(); p != "triggered" {
		t.Errorf("pause-leader with 2 cycles: pacing %q (%s), want triggered", p, tt.FaultsAsRun())
	}
}
