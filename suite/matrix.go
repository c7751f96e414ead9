// Package suite is the known-answer chaos matrix: suite/matrix.yaml lists runs (store,
// recipe, fault profile, workload, resource mode, timings, seeds) with the outcome each must
// produce. The loader is strict, Select picks a tier's rows, Run executes them through
// harness.Run and Compare decides whether each outcome matches its expectation. The same
// rows back `go test -tags chaos ./suite/...`, `splitbrain matrix` and `make chaos`.
package suite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/history/runfile"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
	"github.com/splitbrain-chaos/splitbrain/workloads"
)

// Tiers select rows: smoke (CI, `go test -short`), default (`make chaos`), nightly (every row).
const (
	TierSmoke   = "smoke"
	TierDefault = "default"
	TierNightly = "nightly"
)

// Tiers lists the valid tier names; a row's tags must come from this list.
var Tiers = []string{TierSmoke, TierDefault, TierNightly}

// Verdicts a row may expect. "unknown" is never an expectation: it means the run proved nothing.
var expectableVerdicts = []string{harness.VerdictValid, harness.VerdictInvalid}

// Timing holds the knobs that defaults, tiers and rows can each set; later layers win.
type Timing struct {
	Nodes    int           `yaml:"nodes"`
	TTL      time.Duration `yaml:"ttl"`
	Warmup   time.Duration `yaml:"warmup"`
	Duration time.Duration `yaml:"duration"` // faults phase
	Recovery time.Duration `yaml:"recovery"`
	Seeds    []int64       `yaml:"seeds"`
	// Cycles is how many fault cycles a row whose fault is a profile with an event-paced
	// form runs (nemesis.PacedSpec); the faults phase then ends on events and Duration is
	// its timeout. A tier's cycles apply to the rows that say paced: true (Row.Cycles).
	Cycles int `yaml:"cycles"`
}

// Defaults are the values rows inherit.
type Defaults struct {
	Timing   `yaml:",inline"`
	Workload string `yaml:"workload"`
	Resource string `yaml:"resource"`
}

// Expect is the known answer of a row.
type Expect struct {
	Verdict string `yaml:"verdict"` // valid | invalid
	// FailoverMaxSpec is failover_max as written: "derived" (the recipe's own failover bound
	// plus the fault's detection delay plus FailoverSlack, resolved per case from its timing)
	// or a figure, kept only where a store's own recovery bounds the failover (the note says
	// why).
	FailoverMaxSpec string `yaml:"failover_max"`
	// FailoverMax bounds the slowest failover (fault start → next election) of the run: the
	// resolved FailoverMaxSpec (0 = no bound).
	FailoverMax time.Duration `yaml:"-"`
	// HandoffMaxSpec is handoff_max as written: "derived" (the recipe's handoff bound plus
	// FailoverSlack) or a figure; it bounds the slowest graceful handoff (SIGTERM of the
	// leader → next election) of a row with the handoff workload.
	HandoffMaxSpec string `yaml:"handoff_max"`
	// HandoffMax is the resolved HandoffMaxSpec (0 = no bound).
	HandoffMax time.Duration `yaml:"-"`
	// Overlap: true = belief overlap must occur, false = must not; unset = not asserted.
	Overlap *bool `yaml:"overlap"`
	// Reasons are checker codes that must be among the verdict's reasons.
	Reasons []string `yaml:"reasons"`
	// Findings are checker codes that must be among the verdict-neutral findings.
	Findings []string `yaml:"findings"`
}

// Row is one line of the matrix as written.
type Row struct {
	Name       string   `yaml:"name"` // optional; derived as store/recipe/fault[/resource][/workload]
	Store      string   `yaml:"store"`
	StoreNodes int      `yaml:"store_nodes"`
	Recipe     string   `yaml:"recipe"`
	Candidate  string   `yaml:"candidate"`  // instead of recipe: a script/executable or Go package, relative to the module root (examples.go)
	Packages   []string `yaml:"packages"`   // Debian packages a candidate script needs
	BuildTags  []string `yaml:"build_tags"` // go build tags of a Go package candidate
	Fault      string   `yaml:"fault"`      // nemesis profile name (or a spec with ':'), "none" = no faults
	Workload   string   `yaml:"workload"`
	Resource   string   `yaml:"resource"`
	Require    []string `yaml:"require"`
	// LeaderWork, when set, is passed as SPLITBRAIN_LEADER_WORK (0s: no gap between a
	// leader's lease check and its write, so a paused leader never releases a stale write).
	LeaderWork *time.Duration `yaml:"leader_work"`
	// HandoffEvery puts the handoff workload on a time table (0 = event-paced: each leader
	// gets SIGTERM on its workloads.HandoffWrites-th accepted write).
	HandoffEvery time.Duration `yaml:"handoff_every"`
	// Paced: true runs the profile's event-paced form, the tier's cycles times; false (or
	// unset) keeps its time table (in smoke and default only with a stated miss).
	Paced *bool `yaml:"paced"`
	// Until ends the faults phase on events (harness Config.Until, checkers.ParseGoal), e.g.
	// elections=20 for a negative control whose race needs enough leader changes.
	Until string `yaml:"until"`
	// Miss states how likely the row is to come out otherwise than expected by chance: rows
	// whose outcome depends on a race or on a time-tabled fault landing in a window.
	Miss   *Miss    `yaml:"miss"`
	Tags   []string `yaml:"tags"`
	Timing `yaml:",inline"`
	Expect Expect `yaml:"expect"`
	Note   string `yaml:"note"` // why the expectation is what it is
}

// Miss is a row's stated miss probability: the chance that the run does not show what
// the row expects although the system behaves as the note says, from a stated model.
type Miss struct {
	P     float64 `yaml:"p"`     // per run, e.g. 6e-8
	Model string  `yaml:"model"` // how P follows, e.g. "1/2 per leader change, until elections=24: 2^-24"
}

// MaxMiss is the largest miss probability a smoke or default row may state.
const MaxMiss = 1e-6

// Matrix is the parsed matrix file.
type Matrix struct {
	Defaults Defaults          `yaml:"defaults"`
	Tiers    map[string]Timing `yaml:"tiers"`
	Rows     []Row             `yaml:"rows"`
	Source   string            `yaml:"-"`
	root     string            // module root: candidate paths are relative to it
}

// Root is the module root the matrix file lies in ("" when it lies outside one).
func (m *Matrix) Root() string { return m.root }

// DefaultFile is the matrix's path relative to the module root.
const DefaultFile = "suite/matrix.yaml"

// maxMatrixFile bounds a --file matrix (the project's is about 100 kB).
const maxMatrixFile = 16 << 20

// Load reads and validates a matrix file: a regular file, opened without blocking.
func Load(path string) (*Matrix, error) {
	b, err := runfile.ReadInput(path, maxMatrixFile)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	return Parse(b, path)
}

// Parse decodes and validates matrix YAML; source names it in errors.
func Parse(data []byte, source string) (*Matrix, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var m Matrix
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the matrix is empty: want top-level keys defaults, tiers, rows", source)
		}
		return nil, fmt.Errorf("%s: %v (valid keys: defaults, tiers, rows; row keys: %s)", source, err, strings.Join(rowKeys, ", "))
	}
	m.Source = source
	if root, err := moduleRoot(filepath.Dir(source)); err == nil {
		m.root = root
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

var rowKeys = []string{"name", "store", "store_nodes", "recipe", "candidate", "packages", "build_tags", "fault", "workload", "resource", "require",
	"leader_work", "handoff_every", "paced", "until", "miss", "tags", "nodes", "ttl", "warmup", "duration", "recovery", "seeds", "cycles", "expect", "note"}

var (
	safeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._/=-]*$`)
	codeName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

func (m *Matrix) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(m.Source+": "+format, args...)) }
	if len(m.Rows) == 0 {
		bad("no rows: the matrix needs at least one row under rows:")
	}
	for tier, t := range m.Tiers {
		if !slices.Contains(Tiers, tier) {
			bad("tiers: unknown tier %q: want one of %s", tier, strings.Join(Tiers, ", "))
		}
		if err := t.check(); err != nil {
			bad("tiers.%s: %v", tier, err)
		}
	}
	if err := m.Defaults.Timing.check(); err != nil {
		bad("defaults: %v", err)
	}
	if w := m.Defaults.Workload; w != "" && !slices.Contains(workloads.Names(), w) {
		bad("defaults: unknown workload %q: want one of %s", w, strings.Join(workloads.Names(), ", "))
	}
	if r := m.Defaults.Resource; r != "" && !slices.Contains(harness.ResourceModes, r) {
		bad("defaults: unknown resource mode %q: want one of %s", r, strings.Join(harness.ResourceModes, ", "))
	}
	seen := map[string]int{}
	for i := range m.Rows {
		r := &m.Rows[i]
		if r.Fault == "" {
			r.Fault = "none"
		}
		id := fmt.Sprintf("row %d", i+1)
		if r.Name != "" {
			id += " (" + r.Name + ")"
		} else if r.Store != "" && (r.Recipe != "" || r.Candidate != "") {
			id += " (" + r.derivedName(m.Defaults) + ")"
		}
		for _, err := range append(r.check(m.Defaults), r.checkCandidate(m.root)...) {
			errs = append(errs, fmt.Errorf("%s: %s: %w", m.Source, id, err))
		}
		name := r.FullName(m.Defaults)
		if j, dup := seen[name]; dup {
			bad("%s: name %q is also row %d's: give one of them a distinct name:", id, name, j+1)
		}
		seen[name] = i
	}
	return errors.Join(errs...)
}

func (t Timing) check() error {
	var errs []error
	if t.Nodes < 0 || t.Nodes > 15 {
		errs = append(errs, fmt.Errorf("nodes %d: want 1..15 candidates", t.Nodes))
	}
	if t.Cycles < 0 || t.Cycles > nemesis.MaxCycles {
		errs = append(errs, fmt.Errorf("cycles %d: want 1..%d event-paced fault cycles", t.Cycles, nemesis.MaxCycles))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ttl", t.TTL}, {"warmup", t.Warmup}, {"duration", t.Duration}, {"recovery", t.Recovery}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v: must not be negative", d.name, d.v))
		}
	}
	return errors.Join(errs...)
}

// check returns every problem of the row, each naming the bad value and the valid ones.
func (r *Row) check(d Defaults) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	storeOK := false
	switch {
	case r.Store == "":
		bad("no store: want one of %s", strings.Join(StoreNames(), ", "))
	case !slices.Contains(StoreNames(), r.Store):
		bad("unknown store %q: want one of %s", r.Store, strings.Join(StoreNames(), ", "))
	default:
		storeOK = true
	}
	if r.Recipe == "" && r.Candidate == "" {
		bad("no recipe: want one of %s (or candidate: a path under the module root)", strings.Join(harness.RecipeNames(), ", "))
	} else if r.Recipe == "" { // a candidate: checkCandidate
	} else if storeOK && !linked(r.Store) { // the full binary checks the recipe when it runs the row
	} else if def, err := candidates.Registry.Lookup(r.Recipe); err != nil {
		bad("unknown recipe %q: want one of %s", r.Recipe, strings.Join(harness.RecipeNames(), ", "))
	} else if spec := def.Describe(); storeOK && spec.Store != r.Store {
		bad("recipe %q runs on %s, not %s: use store: %s or one of the %s recipes (%s)", r.Recipe, spec.Store, r.Store,
			spec.Store, r.Store, strings.Join(recipesFor(r.Store), ", "))
	}
	if !strings.Contains(r.Fault, ":") && r.Fault != "none" && !slices.Contains(nemesis.ProfileNames(), r.Fault) {
		bad("unknown fault profile %q: want none or one of %s (or a nemesis spec such as pause:target=leader,for=6s)",
			r.Fault, strings.Join(nemesis.ProfileNames(), ", "))
	} else if _, err := nemesis.Parse(r.Fault); err != nil {
		bad("fault %q: %v", r.Fault, err)
	}
	if r.Workload != "" && !slices.Contains(workloads.Names(), r.Workload) {
		bad("unknown workload %q: want one of %s", r.Workload, strings.Join(workloads.Names(), ", "))
	}
	if r.Resource != "" && !slices.Contains(harness.ResourceModes, r.Resource) {
		bad("unknown resource mode %q: want one of %s", r.Resource, strings.Join(harness.ResourceModes, ", "))
	}
	for _, q := range r.Require {
		if !slices.Contains(harness.Requirements, q) {
			bad("unknown requirement %q: want a subset of %s", q, strings.Join(harness.Requirements, ", "))
		}
	}
	if len(r.Tags) == 0 {
		bad("no tags: want at least one of %s (nightly runs every row anyway)", strings.Join(Tiers, ", "))
	}
	for _, t := range r.Tags {
		if !slices.Contains(Tiers, t) {
			bad("unknown tag %q: want one of %s", t, strings.Join(Tiers, ", "))
		}
	}
	if r.Name != "" && !safeName.MatchString(r.Name) {
		bad("name %q: use lower-case letters, digits and . _ / = - (it becomes a test name)", r.Name)
	}
	if r.StoreNodes < 0 {
		bad("store_nodes %d: want >= 1, or leave it out for the store's default", r.StoreNodes)
	}
	if err := r.Timing.check(); err != nil {
		bad("%v", err)
	}
	if r.Timing.Duration == 0 && d.Duration == 0 {
		bad("no duration: set duration (the faults phase) on the row or under defaults")
	}
	e := r.Expect
	switch {
	case e.Verdict == "":
		bad("no expect.verdict: want one of %s", strings.Join(expectableVerdicts, ", "))
	case !slices.Contains(expectableVerdicts, e.Verdict):
		bad("expect.verdict %q: want one of %s (unknown proves nothing, so it is never an expectation)",
			e.Verdict, strings.Join(expectableVerdicts, ", "))
	}
	if r.Until != "" {
		if _, err := checkers.ParseGoal(r.Until); err != nil {
			bad("until: %v", err)
		}
	}
	if m := r.Miss; m != nil {
		if !(m.P > 0 && m.P < 1) {
			bad("miss.p %v: want the probability of a miss per run, between 0 and 1 (e.g. 6e-8)", m.P)
		}
		if strings.TrimSpace(m.Model) == "" {
			bad("miss.model is empty: say how miss.p follows (e.g. \"1/2 per leader change, until elections=24: 2^-24\")")
		}
	}
	if (r.Paced != nil && *r.Paced || r.Timing.Cycles > 0) && !nemesis.HasPaced(r.Fault) {
		bad("paced: true or cycles:, but fault %q has no event-paced form (profiles with one: splitbrain nemesis list; or write triggers: on=EVENT,count=N)", r.Fault)
	}
	if r.Paced != nil && !*r.Paced && r.Timing.Cycles > 0 {
		bad("paced: false and cycles: %d contradict each other: drop one", r.Timing.Cycles)
	}
	switch spec := strings.TrimSpace(e.FailoverMaxSpec); spec {
	case "":
	case BoundDerived:
		if r.Fault == "none" {
			bad("expect.failover_max needs a fault: with fault none there is no failover to bound")
		}
	default:
		d, err := time.ParseDuration(spec)
		if err != nil || d <= 0 {
			bad("expect.failover_max %q: want %s (the recipe's bound plus the fault's detection plus %v) or a positive duration such as 15s for a failover a store's own recovery bounds", spec, BoundDerived, FailoverSlack)
		} else {
			r.Expect.FailoverMax = d
			e.FailoverMax = d
		}
	}
	if e.FailoverMax < 0 {
		bad("expect.failover_max %v: must be positive", e.FailoverMax)
	}
	if spec := strings.TrimSpace(e.HandoffMaxSpec); spec != "" {
		if r.workload(d) != "handoff" {
			bad("expect.handoff_max needs workload: handoff: without handoffs there is nothing to bound")
		}
		if spec != BoundDerived {
			if h, err := time.ParseDuration(spec); err != nil || h <= 0 {
				bad("expect.handoff_max %q: want %s (the recipe's handoff bound plus %v) or a positive duration", spec, BoundDerived, FailoverSlack)
			} else {
				r.Expect.HandoffMax = h
			}
		}
	}
	if e.FailoverMax > 0 && r.Fault == "none" {
		bad("expect.failover_max needs a fault: with fault none there is no failover to bound")
	}
	for _, c := range append(slices.Clone(e.Reasons), e.Findings...) {
		if !codeName.MatchString(c) {
			bad("expect reason code %q: want a checker code such as stale-write-accepted (see docs/checkers.md)", c)
		}
	}
	if e.Verdict == harness.VerdictValid && len(e.Reasons) > 0 {
		bad("expect.reasons %v with verdict valid: a valid verdict has no reasons; list verdict-neutral codes under expect.findings", e.Reasons)
	}
	return errs
}

// StoreNames lists the stores a row can use: store kinds that have at least one recipe, and
// in the core build the stores it does not link (their rows go to the full binary).
func StoreNames() []string {
	var out []string
	for _, k := range append(stores.Kinds(), storekinds.None) { // none: peer recipes, no cluster
		if len(recipesFor(k)) > 0 || !linked(k) {
			out = append(out, k)
		}
	}
	return out
}

// linked reports whether this binary can run rows on store: the core build (-tags core) links
// no client for some stores, and suite.RunCases hands their rows to Options.Unlinked.
func linked(store string) bool { return store == storekinds.None || storeLinked(stores.Kind(store)) }

// storeLinked is stores.Linked; a test stands in a core build by replacing it.
var storeLinked = stores.Linked

// Unlinked reports whether the case's store is one this binary does not link (core build).
func (c Case) Unlinked() bool { return !linked(c.Config.Store) }

func recipesFor(store string) []string {
	return candidates.Registry.NamesFor(store)
}

// derivedName is store/recipe/fault plus the resource mode and workload when not the defaults.
func (r *Row) derivedName(d Defaults) string {
	recipe := r.Recipe
	if r.Candidate != "" {
		recipe = r.candidateLabel()
	}
	parts := []string{r.Store, recipe, faultLabel(r.Fault)}
	if res := r.resource(d); res != harness.DefaultResourceMode {
		parts = append(parts, res)
	}
	if w := r.workload(d); w != harness.DefaultWorkload {
		parts = append(parts, w)
	}
	return strings.Join(parts, "/")
}

// FullName is the row's test name: its name, or the derived one.
func (r *Row) FullName(d Defaults) string {
	if r.Name != "" {
		return r.Name
	}
	return r.derivedName(d)
}

func faultLabel(f string) string {
	if !strings.Contains(f, ":") {
		return f
	}
	return harness.DefaultTestName("", "", f)
}

func (r *Row) resource(d Defaults) string {
	if r.Candidate != "" {
		return firstNonEmpty(r.Resource, d.Resource, harness.DefaultResourceMode)
	}
	return firstNonEmpty(r.Resource, d.Resource, harness.DefaultResourceFor(r.Recipe))
}

func (r *Row) workload(d Defaults) string {
	return firstNonEmpty(r.Workload, d.Workload, harness.DefaultWorkload)
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// BoundDerived is failover_max's value for a bound derived from the recipe's timing.
const BoundDerived = "derived"

// FailoverSlack is the one slack a derived failover bound adds to the recipe's own bound and
// the fault's detection delay: container start, the log pipeline and scheduling on a loaded
// 2-core machine (a restarted candidate's process start is part of no recipe's timing).
const FailoverSlack = 4 * time.Second

// detectionDelay is how much later than a crash a fault of this kind can be noticed by the
// recipe: a partition or a slow link lets requests hang until their timeouts (about a
// second for every recipe's store client) before the leader gives up or its lease runs out.
func detectionDelay(fault string) time.Duration {
	sched, err := nemesis.Parse(fault)
	if err != nil {
		return 0
	}
	var d time.Duration
	for _, f := range sched.Faults {
		switch f.Kind {
		case "partition", "loss", "delay", "half-open", "bandwidth", "slow-close":
			d = max(d, time.Second)
		}
	}
	return d
}

// DerivedBound is the failover bound of a run of cfg (its fault included): the recipe's
// crash-failover bound at cfg's timing, plus the fault's detection delay, plus
// FailoverSlack, rounded up to a tenth of a second.
func DerivedBound(cfg harness.Config) (time.Duration, error) {
	b, err := harness.FailoverBoundFor(cfg)
	if err != nil {
		return 0, err
	}
	nem := cfg.Nemesis
	if cfg.Cycles > 0 {
		if nem, err = nemesis.PacedSpec(cfg.Nemesis, cfg.Cycles); err != nil {
			return 0, err
		}
	}
	d := b + detectionDelay(nem) + FailoverSlack
	return (d + 99*time.Millisecond).Truncate(100 * time.Millisecond), nil
}

// Case is one run to do: a row at one seed, with every default resolved for a tier.
type Case struct {
	Name   string // row name, plus /seed=N when the row has several seeds
	Row    Row
	Tier   string
	Seed   int64
	Timing Timing // resolved
	// Config runs the case; a Go package candidate's CandidateCmd is where its build goes,
	// built when the case runs (RunCasePooled) or by BuildCandidate: selecting rows to list,
	// shard or refuse them builds nothing (a cold `go build` of each example candidate held
	// up the start of every matrix).
	Config harness.Config
	root   string // the module root the row's candidate path is relative to
}

// BuildCandidate builds the case's Go package candidate (once per process) and returns its
// executable; a failed build's output goes to stderr once and the path returned does not
// exist, so the harness names the problem. "" when the case runs a recipe.
func (c Case) BuildCandidate() string {
	if c.Row.Candidate == "" {
		return ""
	}
	return candidatePath(c.root, c.Row)
}

// Select returns the cases of the tier whose names match filter (a regular expression; ""
// matches all). Nightly selects every row; other tiers select the rows tagged with them.
func (m *Matrix) Select(tier, filter string) ([]Case, error) {
	if !slices.Contains(Tiers, tier) {
		return nil, fmt.Errorf("unknown tier %q: want one of %s", tier, strings.Join(Tiers, ", "))
	}
	var re *regexp.Regexp
	if filter != "" {
		var err error
		if re, err = regexp.Compile(filter); err != nil {
			return nil, fmt.Errorf("filter %q: %v (it is a Go regular expression matched against row names such as etcd/etcd-election/kill-leader)", filter, err)
		}
	}
	var out []Case
	for _, r := range m.Rows {
		if tier != TierNightly && !slices.Contains(r.Tags, tier) {
			continue
		}
		name := r.FullName(m.Defaults)
		t := m.resolve(tier, r.Timing)
		for _, seed := range t.Seeds {
			cn := name
			if len(t.Seeds) > 1 {
				cn = fmt.Sprintf("%s/seed=%d", name, seed)
			}
			if re != nil && !re.MatchString(cn) {
				continue
			}
			c := Case{Name: cn, Row: r, Tier: tier, Seed: seed, Timing: t, Config: m.config(r, t, seed), root: m.root}
			if c.Unlinked() { // its recipe is not in this build: the full binary derives the bounds
				out = append(out, c)
				continue
			}
			if r.Expect.FailoverMaxSpec == BoundDerived {
				b, err := DerivedBound(c.Config)
				if err != nil {
					return nil, fmt.Errorf("%s: failover_max derived: %w", cn, err)
				}
				c.Row.Expect.FailoverMax = b
			}
			if r.Expect.HandoffMaxSpec == BoundDerived {
				b, err := harness.HandoffBoundFor(c.Config)
				if err != nil {
					return nil, fmt.Errorf("%s: handoff_max derived: %w", cn, err)
				}
				c.Row.Expect.HandoffMax = (b + FailoverSlack + 99*time.Millisecond).Truncate(100 * time.Millisecond)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// resolve layers row over tier over defaults, with the harness defaults last.
func (m *Matrix) resolve(tier string, row Timing) Timing {
	t := row
	layers := []Timing{m.Tiers[tier], m.Defaults.Timing, {Nodes: harness.DefaultNodes, TTL: harness.DefaultTTL,
		Warmup: harness.DefaultWarmup, Recovery: harness.DefaultRecovery, Seeds: []int64{1}}}
	for _, l := range layers {
		if t.Nodes == 0 {
			t.Nodes = l.Nodes
		}
		if t.TTL == 0 {
			t.TTL = l.TTL
		}
		if t.Warmup == 0 {
			t.Warmup = l.Warmup
		}
		if t.Duration == 0 {
			t.Duration = l.Duration
		}
		if t.Recovery == 0 {
			t.Recovery = l.Recovery
		}
		if len(t.Seeds) == 0 {
			t.Seeds = l.Seeds
		}
		if t.Cycles == 0 {
			t.Cycles = l.Cycles
		}
	}
	return t
}

// Cycles is how many event-paced cycles the row runs at timing t (0: its schedule as
// written, time-tabled or triggered). A row runs its profile's event-paced form only when
// it says so, so matrix.yaml shows each row's pacing: its own cycles:, or paced: true for
// the tier's cycles.
func (r *Row) Cycles(t Timing) int {
	switch {
	case !nemesis.HasPaced(r.Fault) || r.Paced != nil && !*r.Paced:
		return 0
	case r.Timing.Cycles > 0:
		return r.Timing.Cycles
	case r.Paced != nil && *r.Paced:
		return t.Cycles
	}
	return 0
}

func (m *Matrix) config(r Row, t Timing, seed int64) harness.Config {
	cfg := harness.Config{
		Store: r.Store, StoreNodes: r.StoreNodes, Recipe: r.Recipe, Nodes: t.Nodes,
		FaultTime: t.Duration, Warmup: t.Warmup, Recovery: t.Recovery, TTL: t.TTL,
		Workload: r.workload(m.Defaults), ResourceMode: r.resource(m.Defaults),
		Seed: seed, Nemesis: r.Fault, Require: slices.Clone(r.Require),
		TestName: testName(r.FullName(m.Defaults)), Cycles: r.Cycles(t), Until: r.Until,
		HandoffEvery: r.HandoffEvery,
	}
	if r.Candidate != "" {
		cfg.CandidateCmd, _ = r.candidateOut(m.root)
		cfg.CandidatePackages = slices.Clone(r.Packages)
	}
	if r.LeaderWork != nil {
		cfg.LeaderWork, cfg.LeaderWorkSet = *r.LeaderWork, true
	}
	if cfg.Until == "" && allTriggered(r.Fault) {
		cfg.Until = "faults" // every fault counted: the phase ends when they have run
	}
	return cfg
}

// allTriggered reports whether every fault of spec starts on an event with a count, so the
// faults phase can end when they have all run.
func allTriggered(spec string) bool {
	sched, err := nemesis.Parse(spec)
	if err != nil || len(sched.Faults) == 0 {
		return false
	}
	for _, f := range sched.Faults {
		if !f.On.IsSet() || f.Count <= 0 {
			return false
		}
	}
	return true
}

// testName turns a row name into a run-directory name (no slashes).
func testName(rowName string) string {
	n := strings.NewReplacer("/", "--", "=", "-").Replace(rowName)
	if len(n) > 100 {
		n = n[:100]
	}
	return n
}

// Planned is the configured run time (warmup + faults + recovery) of a case.
// For an event-ended case (EventEnded) it is the most the phases may take: their timeouts.
func (c Case) Planned() time.Duration { return c.Timing.Warmup + c.Timing.Duration + c.Timing.Recovery }

// EventEnded reports whether the case's phases end on events (until:, cycles), its
// durations being timeouts.
func (c Case) EventEnded() bool { return c.Config.Until != "" || c.Config.Cycles > 0 }

// PlanText is how listings show the case's length: "28s" for phases on the clock, "<=1m8s"
// (the timeouts) for an event-ended case.
func (c Case) PlanText() string {
	if c.EventEnded() {
		return "<=" + c.Planned().String()
	}
	return c.Planned().String()
}

// FaultsAsRun is the fault schedule the case runs, written out: a profile row with cycles
// gets its event-paced form (the triggers it fires on), a plain profile its time table, a
// written schedule itself. matrix.yaml names profiles; listings show this instead, so a
// reader sees on which event every fault fires without looking the profile up.
func (c Case) FaultsAsRun() string {
	name := c.Config.Nemesis
	if c.Config.Cycles > 0 {
		if spec, err := nemesis.PacedSpec(name, c.Config.Cycles); err == nil {
			return spec
		}
	}
	for _, p := range nemesis.Profiles() {
		if p.Name == name {
			return p.Spec
		}
	}
	return name
}

// Pacing says how the case's faults are placed: "fault-free", "triggered" (every fault fires
// on an event), "statistical" (a stated miss probability) or "time-tabled" (some fault on the
// clock with no stated miss probability: smoke and default refuse those, TestMatrixFile).
func (c Case) Pacing() string {
	sched, err := nemesis.Parse(c.FaultsAsRun())
	switch {
	case err != nil:
		return "unparsed"
	case len(sched.Faults) == 0:
		return "fault-free"
	case c.Row.Miss != nil:
		return "statistical"
	}
	for _, f := range sched.Faults {
		if !f.On.IsSet() {
			return "time-tabled"
		}
	}
	return "triggered"
}

// EndText says when the case's faults phase ends: the event goal and its timeout, or the clock.
func (c Case) EndText() string {
	if !c.EventEnded() {
		return fmt.Sprintf("after %v", c.Timing.Duration)
	}
	goal := c.Config.Until
	if goal == "" {
		goal = "faults"
	}
	s := fmt.Sprintf("until %s (timeout %v)", goal, c.Timing.Duration)
	if c.Row.Miss != nil {
		s += fmt.Sprintf("; miss p=%.1g: %s", c.Row.Miss.P, c.Row.Miss.Model)
	}
	return s
}
