package shrink

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
	"github.com/splitbrain-chaos/splitbrain/reports/runconfig"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

// Recorded is a finished run read back from its directory: the configuration to run it
// again, its concrete fault plan and what it concluded.
type Recorded struct {
	Dir     string
	Config  harness.Config // as the run was configured (Plan set when it had faults)
	Verdict string
	Codes   []string // codes of the reasons that made the verdict, sorted, unique
	// Invalid are the codes of its invalid reasons alone (not an unknown's goal-not-met or
	// fault-missing beside them): what a try must show again to fail the same way.
	Invalid []string
}

// Want is what a shrink try or a reproduction must show to fail as the run did: its invalid
// codes (its codes, when none is marked invalid).
func (r *Recorded) Want() []string {
	if len(r.Invalid) > 0 {
		return r.Invalid
	}
	return r.Codes
}

// ReadInvalid reads the codes of a run's invalid reasons (sorted, once each); nil when it has
// none or no readable results.json.
func ReadInvalid(dir string) []string {
	b, err := runfile.ReadFile(filepath.Join(dir, harness.ResultsFile), runfile.MaxJSON)
	if err != nil {
		return nil
	}
	var res struct {
		Reasons []struct {
			Code     string `json:"code"`
			Severity string `json:"severity"`
		} `json:"reasons"`
	}
	if json.Unmarshal(b, &res) != nil {
		return nil
	}
	var codes []string
	for _, r := range res.Reasons {
		if r.Severity == "invalid" {
			codes = append(codes, r.Code)
		}
	}
	sort.Strings(codes)
	return slices.Compact(codes)
}

// FailsAs says the run in dir is invalid with one of want's codes among its invalid reasons.
// An unknown-severity code beside them (goal-not-met, fault-missing) is not a reproduction:
// a find whose run also missed its goal was matched by any invalid try that missed it too.
func FailsAs(dir, verdict string, want []string) bool {
	if verdict != harness.VerdictInvalid {
		return false
	}
	return slices.ContainsFunc(ReadInvalid(dir), func(c string) bool { return slices.Contains(want, c) })
}

// Load reads RUN_DIR's config.json and results.json.
func Load(dir string) (*Recorded, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	rc, err := runconfig.Read(abs)
	if err != nil {
		return nil, fmt.Errorf("%s is not a run directory (no readable config.json): %w", dir, err)
	}
	f := rc.Flags
	c := harness.Config{
		Store: f.Store, StoreNodes: f.StoreNodes, Recipe: f.Recipe, Nodes: f.Nodes,
		Workload: f.Workload, ResourceMode: f.ResourceMode, CandidateCmd: f.CandidateCmd,
		CandidateImage: f.CandidateImage, Seed: rc.Seed, Nemesis: f.Nemesis, Until: f.Until,
		Profile: f.Profile, Require: f.Require, ReplayOf: abs,
		CandidatePackages: f.CandidatePackages, CandidateArgs: f.CandidateArgs, CandidateEnv: f.CandidateEnv,
		// Replays and shrink tries sit next to the original: <root>/<test>-replay/<run>.
		StoreRoot: filepath.Dir(filepath.Dir(abs)),
	}
	for _, d := range []struct {
		dst  *time.Duration
		text string
		name string
	}{{&c.FaultTime, f.Time, "time"}, {&c.Warmup, f.Warmup, "warmup"}, {&c.Recovery, f.Recovery, "recovery"},
		{&c.TTL, f.TTL, "ttl"}, {&c.WriteInterval, f.WriteInterval, "write_interval"},
		// The candidate's timing and program as given: without them a shrink try, a
		// reproduction and the printed line ran another configuration than the find (issue 48).
		{&c.RenewInterval, f.RenewInterval, "renew_interval"}, {&c.RetryInterval, f.RetryInterval, "retry_interval"},
		{&c.FailoverBound, f.FailoverBound, "failover_bound"}, {&c.LeaderWork, f.LeaderWork, "leader_work"}} {
		if d.text == "" {
			continue
		}
		if *d.dst, err = time.ParseDuration(d.text); err != nil {
			return nil, fmt.Errorf("%s/config.json: flags.%s %q: %w", dir, d.name, d.text, err)
		}
	}
	c.LeaderWorkSet = f.LeaderWork != ""
	// The handoff workload's periods are not in flags; the recorded command line has them.
	c.HandoffEvery = argDuration(rc.Args, "handoff-every")
	c.HandoffPause = argDuration(rc.Args, "handoff-pause")
	if len(rc.Plan) > 0 {
		var p nemesis.Plan
		if err := json.Unmarshal(rc.Plan, &p); err != nil {
			return nil, fmt.Errorf("%s/config.json: the fault plan does not decode: %w", dir, err)
		}
		c.Plan = &p
	}
	r := &Recorded{Dir: abs, Config: c}
	r.Verdict, r.Codes, err = ReadVerdict(abs)
	if err != nil {
		return nil, err
	}
	r.Invalid = ReadInvalid(abs)
	return r, nil
}

// TestName is the original run's test name (the directory above the run).
func (r *Recorded) TestName() string { return filepath.Base(filepath.Dir(r.Dir)) }

func argDuration(args []string, name string) time.Duration {
	for i, a := range args {
		for _, p := range []string{"--" + name, "-" + name} {
			var v string
			switch {
			case a == p && i+1 < len(args):
				v = args[i+1]
			case strings.HasPrefix(a, p+"="):
				v = strings.TrimPrefix(a, p+"=")
			default:
				continue
			}
			if d, err := time.ParseDuration(v); err == nil {
				return d
			}
		}
	}
	return 0
}

// ReadVerdict reads a run directory's verdict and its reason codes (sorted, once each) from
// results.json.
func ReadVerdict(dir string) (string, []string, error) {
	b, err := runfile.ReadFile(filepath.Join(dir, harness.ResultsFile), runfile.MaxJSON)
	if err != nil {
		return "", nil, fmt.Errorf("%s has no results.json (the run never got to checking): %w", dir, err)
	}
	var res struct {
		Verdict string `json:"verdict"`
		Reasons []struct {
			Code string `json:"code"`
		} `json:"reasons"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return "", nil, fmt.Errorf("%s/results.json: %w", dir, err)
	}
	var codes []string
	for _, r := range res.Reasons {
		codes = append(codes, r.Code)
	}
	sort.Strings(codes)
	return res.Verdict, slices.Compact(codes), nil
}

// Label is "invalid stale-write-accepted" — a verdict with its codes.
func Label(verdict string, codes []string) string {
	if len(codes) == 0 {
		return verdict
	}
	return verdict + " " + strings.Join(codes, ",")
}

// HarnessRunner runs cases as real runs of a recorded configuration.
type HarnessRunner struct {
	Base harness.Config // the recorded configuration; Plan, phases and Nodes come from the case
	// Want are the invalid codes of the original: a try fails when it is invalid with one of
	// them (another failure is another bug, not this one made smaller).
	Want []string
	// Configure adjusts each run's config (progress output, test name).
	Configure func(*harness.Config)
}

// Run runs the case once and reads its verdict back from the run directory.
func (h HarnessRunner) Run(ctx context.Context, c Case) (Outcome, error) {
	cfg := ForCase(h.Base, c)
	if h.Configure != nil {
		h.Configure(&cfg)
	}
	t0 := time.Now()
	out, err := harness.Run(ctx, cfg)
	o := Outcome{Elapsed: time.Since(t0)}
	if out != nil {
		o.RunDir = out.RunDir
	}
	if err != nil {
		return o, err
	}
	o.Verdict, o.Codes, err = ReadVerdict(out.RunDir)
	if err != nil {
		return o, err
	}
	o.Failed = FailsAs(out.RunDir, o.Verdict, h.Want)
	return o, nil
}

// CaseOf is the recorded run as a case to shrink.
// Suspects are the fault kinds the recorded failure's cause class rests on (a clock step for
// clock-step, a crash for store-amnesia), nil for own-logic or a run without results: the
// drops a shrink tries first (Options.Suspects).
func (r *Recorded) Suspects() []string {
	res, err := checkers.ReadResults(filepath.Join(r.Dir, harness.ResultsFile))
	if err != nil || res.Verdict != harness.VerdictInvalid {
		return nil
	}
	c := res.Cause
	if c == nil {
		a := checkers.AttributeCause(res)
		c = &a
	}
	var kinds []string
	for _, class := range append([]string{c.Class}, c.Also...) {
		kinds = append(kinds, checkers.CauseFaultKinds[class]...)
	}
	return kinds
}

func (r *Recorded) CaseOf() (Case, error) {
	c := r.Config
	if c.Plan == nil {
		return Case{}, fmt.Errorf("%s has no fault plan in config.json: nothing to shrink", r.Dir)
	}
	return Case{Nodes: c.Nodes, Warmup: c.Warmup, Recovery: c.Recovery, Plan: *c.Plan}, nil
}

// Limits are DefaultLimits fitted to the recorded run: when its faults phase ends on events
// (--until), a shrunk phase keeps what that goal waited for after the last fault, so a
// shrunk line does not time out unknown. The goal waits for the last fault's real heal
// (a crash heals when its node has started again, seconds after its for=: HealLag) and
// then for the settle and a leader's writes: the longer of the settle and the time the
// recorded run's writes took to come back after its last heal, plus MinRecovery.
func (r *Recorded) Limits() (Limits, error) {
	lim := DefaultLimits
	if r.Config.Until == "" {
		return lim, nil
	}
	g, err := checkers.ParseGoal(r.Config.Until)
	if err != nil {
		return lim, fmt.Errorf("%s/config.json: flags.until %q: %w", r.Dir, r.Config.Until, err)
	}
	wait := g.Settle
	if res, err := checkers.ReadResults(filepath.Join(r.Dir, harness.ResultsFile)); err == nil {
		lim.HealLag = healLags(res, r.Config.TTL)
		if !slices.Contains(r.Codes, "goal-not-met") { // its phase ended on the goal
			wait = max(wait, goalWait(res))
		}
	}
	lim.AfterLastFault = wait + lim.MinRecovery
	return lim, nil
}

// healLags reads, per fault kind, the longest a recorded fault of that kind took to heal
// beyond its for= (issue 48: a Redis kill for 200 ms was back 2.8 s later; a line shrunk to
// the planned end plus the settle timed out goal-not-met in 2 of 5 reproductions).
func healLags(res *checkers.Results, ttl time.Duration) map[string]time.Duration {
	var lags map[string]time.Duration
	for _, f := range res.Faults {
		if f.Open || f.Error != "" || f.EndT <= f.StartT || f.Spec == "" {
			continue
		}
		s, err := nemesis.Parse(f.Spec)
		if err != nil || len(s.Faults) != 1 || !s.Faults[0].For.Set {
			continue
		}
		lag := time.Duration(f.EndT-f.StartT) - s.Faults[0].For.Resolve(ttl)
		if lag > lags[f.Kind] {
			if lags == nil {
				lags = map[string]time.Duration{}
			}
			lags[f.Kind] = lag
		}
	}
	return lags
}

// goalWait is how long the recorded faults phase went on after its last fault healed: the
// wait for its goal's writes and settle (0 when the run has no heal or no fault).
func goalWait(res *checkers.Results) time.Duration {
	var last int64
	for _, f := range res.Faults {
		if f.Error == "" && !f.Open {
			last = max(last, f.EndT)
		}
	}
	if last == 0 || res.Run.HealT <= last {
		return 0
	}
	return time.Duration(res.Run.HealT - last)
}

// ForCase returns base run with the case's nodes, phases and plan.
func ForCase(base harness.Config, c Case) harness.Config {
	cfg := base
	cfg.Nodes, cfg.Warmup, cfg.Recovery = c.Nodes, c.Warmup, c.Recovery
	cfg.FaultTime = c.FaultPhase()
	p := c.Plan
	p.Faults = slices.Clone(c.Plan.Faults)
	cfg.Plan = &p
	return cfg
}

// Spec renders a plan as a --nemesis spec: each fault once, at its planned offset and for
// its planned length. Targets the seed chose become node:NAME when they are one node;
// other seeded shapes keep their expression, so the spec is exact only with the run's
// --seed (the replay command always is). exact says whether the spec pins every choice.
func Spec(p nemesis.Plan) (spec string, exact bool) {
	if len(p.Faults) == 0 && len(p.Triggers) == 0 {
		return "none", true
	}
	exact = true
	var parts []string
	for _, f := range p.Faults {
		part, ex := faultSpec(f, "at="+time.Duration(f.At).String(), "for="+time.Duration(f.For).String())
		exact = exact && ex
		parts = append(parts, part)
	}
	// Triggered faults keep their event; what fires them is up to the run, as in the original.
	for _, t := range p.Triggers {
		kv := []string{"on=" + t.On}
		if t.After > 0 {
			kv = append(kv, "after="+time.Duration(t.After).String())
		}
		kv = append(kv, "for="+time.Duration(t.Fault.For).String())
		if t.Every > t.After+t.Fault.For {
			kv = append(kv, "every="+time.Duration(t.Every).String())
		}
		if t.Count > 0 {
			kv = append(kv, "count="+strconv.Itoa(t.Count))
		}
		part, ex := faultSpec(t.Fault, kv...)
		exact = exact && ex
		parts = append(parts, part)
	}
	return strings.Join(parts, "; "), exact
}

// faultSpec renders one fault with its target, parameters and the given timing keys.
func faultSpec(f nemesis.PlannedFault, timing ...string) (string, bool) {
	exact := true
	target := f.Target
	switch {
	case len(f.Chosen) == 1 && len(f.Grudge) == 0:
		target = "node:" + f.Chosen[0]
	case len(f.Chosen) > 1 || len(f.Grudge) > 0:
		exact = false
	}
	kv := []string{}
	if target != "" {
		kv = append(kv, "target="+target)
	}
	keys := make([]string, 0, len(f.Params))
	for k := range f.Params {
		if k == "peer" && f.Kind == "partition" && f.Params["shape"] == "leader-from-store" {
			// The planner records the store as the shape's peer; the spec refuses a peer for
			// it ("always cuts from the store"), so a line that carried it could not run
			// (issue 48: two explore finds printed such a line, reproduced "0/5").
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv = append(kv, k+"="+f.Params[k])
	}
	kv = append(kv, timing...)
	return f.Kind + ":" + strings.Join(kv, ","), exact
}
