package nemesis

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Plans are bounded before they are built: no spec, TTL or phase makes the planner
// materialise more than MaxPlannedFaults occurrences (every=2ns once asked for 15 billion).
func TestPlanBoundedBeforeBuilt(t *testing.T) {
	topo := Topology{Candidates: []string{"c1", "c2", "c3"}, StoreNodes: []string{"redis"}, StoreKind: "redis", TTL: time.Second}
	for _, tc := range []struct {
		spec  string
		phase time.Duration
		ttl   time.Duration
		want  string
	}{
		{"pause:for=1ns,every=2ns", 30 * time.Second, 0, "for=1ns resolves to 1ns: a fault must last at least 1ms"},
		{"pause:for=1ms,every=2ms", 30 * time.Second, 0, "more than 1000"},
		{"pause-leader", 30 * time.Second, time.Nanosecond, "lease TTL 1ns is below 1ms"},
		{"pause-leader", 100000 * time.Hour, 0, "fault phase 100000h0m0s is longer than 1000h0m0s"},
		{"pause-leader", 999 * time.Hour, 0, "more than 1000"},
		{"pause:target=leader,on=elected,for=1s", 999 * time.Hour, 0, "more than 1000"}, // a trigger at its worst case
		{strings.Repeat("pause:target=leader,on=elected,for=1s,count=1;", 40), 30 * time.Second, 0, "in effect at once"},
		{"pause:for=1s,every=5s,jitter=100h", 30 * time.Second, 0, "jitter=100h resolves to 100h0m0s: it must be between 0 and the fault phase"},
		{"pause:target=leader,on=elected,after=100h,for=1s", 30 * time.Second, 0, "after=100h resolves to 100h0m0s"},
	} {
		s, err := Parse(tc.spec)
		if err == nil {
			tp := topo
			if tc.ttl != 0 {
				tp.TTL = tc.ttl
			}
			_, err = s.Plan(1, tc.phase, tp)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60s (phase %s): got %v, want an error containing %q", tc.spec, tc.phase, err, tc.want)
		}
	}
}

// Every duration key is finite and in range, refused at parse time with the key named.
func TestDurationKeysFiniteAndInRange(t *testing.T) {
	for spec, key := range map[string]string{
		"pause:target=leader,for=2s,at=NaNxTTL":                             "at",
		"pause:target=leader,for=2s,at=InfxTTL":                             "at",
		"pause:target=leader,on=elected,after=InfxTTL,for=1s":               "after",
		"pause:target=leader,on=elected,after=NaNxTTL,for=1s":               "after",
		"pause:target=leader,on=elected,after=9223372036854775807ns,for=1s": "after",
		"pause:target=leader,on=elected,after=10000000000xTTL,for=1s":       "after",
		"clock:target=leader,delta=1e300xTTL,for=2s":                        "delta",
		"clock:target=leader,delta=NaNxTTL,for=2s":                          "delta",
		"clock:target=leader,delta=-InfxTTL,for=2s":                         "delta",
		"pause:for=1s,every=5s,jitter=InfxTTL":                              "jitter",
		"delay:latency=10ms,latency-jitter=NaNxTTL":                         "latency-jitter",
		"pause:for=0x1p-2xTTL":                                              "for",
		"pause:for=2562047h":                                                "for",
	} {
		_, err := Parse(spec)
		if err == nil || !strings.Contains(err.Error(), key) || !(strings.Contains(err.Error(), "e.g.") || strings.Contains(err.Error(), "at most")) {
			t.Errorf("%s: got %v, want an error naming %s= and how to write it", spec, err, key)
		}
	}
	if d, err := ParseDur("10000xTTL"); err != nil || d.Resolve(1000000*time.Hour) != math.MaxInt64 {
		t.Errorf("10000xTTL at a 1000000h TTL: %v %v, want it saturated, not wrapped", d.Resolve(1000000*time.Hour), err)
	}
}

// Plans given whole (replay, shrink, an edited config.json) get the same checks and caps.
func TestCheckGivenPlan(t *testing.T) {
	topo := Topology{Candidates: []string{"c1", "c2", "c3"}, StoreNodes: []string{"redis"}, StoreKind: "redis", TTL: time.Second}
	s, _ := Parse("pause:at=1s,for=2s; pause:on=elected,for=1s")
	good, err := s.Plan(1, 30*time.Second, topo)
	if err != nil || good.CheckGiven() != nil {
		t.Fatalf("a built plan: %v / %v", err, good.CheckGiven())
	}
	for name, tc := range map[string]struct {
		edit func(p *Plan)
		want string
	}{
		"5000 faults": {func(p *Plan) {
			f := p.Faults[0]
			p.Faults = nil
			for i := range 5000 {
				f.ID = i + 1
				p.Faults = append(p.Faults, f)
			}
		}, "more than 1000"},
		"unknown kind":    {func(p *Plan) { p.Faults[0].Kind = "rm-rf" }, `unknown fault kind "rm-rf"`},
		"negative at":     {func(p *Plan) { p.Faults[0].At = Duration(-1000 * time.Hour) }, "does not fit"},
		"at+for overflow": {func(p *Plan) { p.Faults[0].At, p.Faults[0].For = 1, Duration(math.MaxInt64) }, "does not fit"},
		"trigger after":   {func(p *Plan) { p.Triggers[0].After = Duration(-time.Hour) }, "does not fit"},
		"trigger every":   {func(p *Plan) { p.Triggers[0].Every = 0 }, "cooldown"},
		"trigger on":      {func(p *Plan) { p.Triggers[0].On = "rm -rf" }, "unknown event"},
		"bad param":       {func(p *Plan) { p.Faults[0].Params = map[string]string{"evil": "1"} }, `no parameter "evil"`},
		"many triggers": {func(p *Plan) {
			one := p.Triggers[0]
			one.Count = 1
			for range 40 {
				p.Triggers = append(p.Triggers, one)
			}
		}, "in effect at once"},
		"huge phase": {func(p *Plan) { p.FaultPhase = Duration(2562047 * time.Hour) }, "fault phase"},
	} {
		p, _ := s.Plan(1, 30*time.Second, topo)
		tc.edit(&p)
		if err := p.CheckGiven(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
}
