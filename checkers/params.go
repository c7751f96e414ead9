// Package checkers turns a run's history into an explainable verdict: leadership tenures and
// their overlap, effects at the fenced resource, fencing tokens, Porcupine linearizability
// models, availability and failover latency, and candidate contract violations. Check runs
// them all; docs/checkers.md explains each and docs/results.md the results.json schema.
package checkers

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes JSON as a Go duration string ("2s");
// a bare JSON number is read as nanoseconds.
type Duration time.Duration

func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want a Go duration such as \"2s\" or \"150ms\"", s)
		}
		*d = Duration(v)
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("duration %s: want a string such as \"2s\" or an integer of nanoseconds", b)
	}
	*d = Duration(n)
	return nil
}

// Requirements beyond the default safety criterion.
const (
	RequireExclusive = "exclusive" // any overlap of leadership beliefs makes the run invalid
	RequireLiveness  = "liveness"  // liveness failures make the run invalid
)

// Resource modes, as the resource reports them in decisions.
const (
	ModeFenced   = "fenced"
	ModeUnfenced = "unfenced"
)

// Defaults used when a Params field is zero.
const (
	DefaultPorcupineTimeout = 60 * time.Second
	DefaultSlack            = time.Second
	// defaultUnavailableFactor times the write interval is the default unavailability threshold.
	defaultUnavailableFactor = 4
	defaultWriteInterval     = 50 * time.Millisecond
)

// Params configures a check. The run lifecycle stores it in the run directory's config.json
// under the key "check"; `splitbrain check` reads it from there (flags override).
type Params struct {
	Store         string   `json:"store,omitempty"`
	Recipe        string   `json:"recipe,omitempty"`
	Nodes         []string `json:"nodes,omitempty"`          // candidate node names (c1..cN); derived from the history when empty
	LeaseTTL      Duration `json:"lease_ttl,omitempty"`      // the recipe's lease/session TTL
	WriteInterval Duration `json:"write_interval,omitempty"` // the leader's write interval (default 50ms)
	RetryInterval Duration `json:"retry_interval,omitempty"` // the recipe's campaign retry/poll interval
	ResourceMode  string   `json:"resource_mode,omitempty"`  // fenced | unfenced (informational; decisions carry the mode)
	// Library names a library recipe's pinned packages, e.g. "python3-kazoo 2.8.0-2 (Debian)"
	// (informational: what ran).
	Library []string `json:"library,omitempty"`

	// ExpectedFailover is the bound a leader must return within after a fault heals. Zero
	// derives it as LeaseTTL + Detection + RetryInterval + Slack.
	ExpectedFailover Duration `json:"expected_failover,omitempty"`
	Detection        Duration `json:"detection,omitempty"` // store-side detection granularity (e.g. ZK tick)
	Slack            Duration `json:"slack,omitempty"`     // stated slack on top (default 1s)

	// UnavailableThreshold: a gap without accepted writes longer than this is an
	// unavailability window. Zero = 4 × WriteInterval.
	UnavailableThreshold Duration `json:"unavailable_threshold,omitempty"`

	Require []string `json:"require,omitempty"` // exclusive, liveness

	// Goal, when set, is the event-ended fault phase's goal (--until): a run whose phase
	// timed out before it is unknown (goal-not-met).
	Goal *Goal `json:"until,omitempty"`

	// PorcupineTimeout bounds each Porcupine model's search (default 60s); a timeout is
	// "unknown", never "valid". Negative skips Porcupine (its models are then "skipped").
	PorcupineTimeout Duration `json:"porcupine_timeout,omitempty"`
	// OutputDir receives the Porcupine visualizations; empty writes none.
	OutputDir string `json:"output_dir,omitempty"`
}

// ParseRequirements parses a comma-separated requirement list such as "exclusive,liveness".
func ParseRequirements(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if r == "" || seen[r] {
			continue
		}
		if r != RequireExclusive && r != RequireLiveness {
			return nil, fmt.Errorf("unknown requirement %q: valid are %q and %q (comma-separated)", r, RequireExclusive, RequireLiveness)
		}
		seen[r] = true
		out = append(out, r)
	}
	sort.Strings(out)
	return out, nil
}

// Validate reports the first unusable field, saying how to fix it.
func (p *Params) Validate() error {
	for _, r := range p.Require {
		if r != RequireExclusive && r != RequireLiveness {
			return fmt.Errorf("check.require: unknown requirement %q: valid are %q and %q", r, RequireExclusive, RequireLiveness)
		}
	}
	if p.ResourceMode != "" && p.ResourceMode != ModeFenced && p.ResourceMode != ModeUnfenced {
		return fmt.Errorf("check.resource_mode %q: want %q or %q", p.ResourceMode, ModeFenced, ModeUnfenced)
	}
	for name, d := range map[string]Duration{"lease_ttl": p.LeaseTTL, "write_interval": p.WriteInterval,
		"retry_interval": p.RetryInterval, "expected_failover": p.ExpectedFailover, "detection": p.Detection,
		"slack": p.Slack, "unavailable_threshold": p.UnavailableThreshold} {
		if d < 0 {
			return fmt.Errorf("check.%s is negative (%v): durations must be >= 0", name, d.D())
		}
	}
	if g := p.Goal; g != nil && (g.Faults < 0 || g.Writes < 0 || g.Elections < 0 || g.Handoffs < 0) {
		return fmt.Errorf("check.until %+v: counts must be >= 0", *g)
	}
	return nil
}

func (p *Params) requires(r string) bool {
	for _, x := range p.Require {
		if x == r {
			return true
		}
	}
	return false
}

// FailoverBound is the expected failover bound: ExpectedFailover, or derived from its pieces.
func (p *Params) FailoverBound() time.Duration {
	if p.ExpectedFailover > 0 {
		return p.ExpectedFailover.D()
	}
	slack := p.Slack.D()
	if slack == 0 {
		slack = DefaultSlack
	}
	return p.LeaseTTL.D() + p.Detection.D() + p.RetryInterval.D() + slack
}

// UnavailableAfter is the gap without accepted writes that counts as unavailability.
func (p *Params) UnavailableAfter() time.Duration {
	if p.UnavailableThreshold > 0 {
		return p.UnavailableThreshold.D()
	}
	wi := p.WriteInterval.D()
	if wi <= 0 {
		wi = defaultWriteInterval
	}
	return defaultUnavailableFactor * wi
}

func (p *Params) porcupineTimeout() time.Duration {
	if p.PorcupineTimeout == 0 {
		return DefaultPorcupineTimeout
	}
	return p.PorcupineTimeout.D()
}
