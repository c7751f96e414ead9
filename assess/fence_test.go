package assess

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/history"
)

var fenceChecks = []string{"fence-lying", "fence-unreachable", "fence-slow"}

// The fence checks apply to a candidate that uses the fence device: a recipe that declares
// it, or an external candidate the user says fences (--fence); nobody else.
func TestFenceChecksOnlyForCandidatesThatFence(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want bool
	}{
		{"etcd-stonith", Options{Store: "etcd", Recipe: "etcd-stonith", OutDir: "x"}, true},
		{"etcd-stonith-proceed", Options{Store: "etcd", Recipe: "etcd-stonith-proceed", OutDir: "x"}, true},
		{"etcd-election", Options{Store: "etcd", Recipe: "etcd-election", OutDir: "x"}, false},
		{"external", Options{Store: "etcd", CandidateCmd: []string{"cand.sh"}, OutDir: "x"}, false},
		{"external with --fence", Options{Store: "etcd", CandidateCmd: []string{"cand.sh"}, Fence: true, OutDir: "x"}, true},
		{"image with --fence", Options{Store: "redis", CandidateImage: "me/cand", Fence: true, OutDir: "x"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, skipped, err := PlanWithSkips(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range fenceChecks {
				i := slices.IndexFunc(cs, func(c Check) bool { return c.Name == n })
				if got := i >= 0; got != tc.want {
					t.Fatalf("%s planned %v, want %v (plan %v)", n, got, tc.want, names(cs))
				}
				if !tc.want {
					if !slices.Contains(skippedNames(skipped), n) {
						t.Errorf("%s is neither planned nor listed as left out", n)
					}
					continue
				}
				c := cs[i]
				if c.Fence != n || !c.Paced || c.Fault != n+"-pause-leader" {
					t.Errorf("%s: %+v", n, c)
				}
				// The work gap only for a candidate that declares it (a Go recipe).
				if gap := tc.opts.Recipe != ""; (c.LeaderWork != nil) != gap {
					t.Errorf("%s: leader work %v, want one: %v", n, c.LeaderWork, gap)
				}
			}
		})
	}
	if _, err := Plan(Options{Store: "etcd", Recipe: "etcd-election", Checks: []string{"fence-lying"}, OutDir: "x"}); err == nil || !strings.Contains(err.Error(), "fence device") {
		t.Errorf("a fence check asked for a candidate that does not fence: %v", err)
	}
}

// The fence checks are runnable cases for etcd-stonith, their bounds add the time the
// device cannot confirm a power-off.
func TestFenceChecksAreRunnableCases(t *testing.T) {
	opts := Options{Store: "etcd", Recipe: "etcd-stonith", Checks: fenceChecks, OutDir: t.TempDir()}
	cs, err := Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{opts: opts}
	outage := map[string]int{"fence-lying": 0, "fence-unreachable": 6, "fence-slow": 9}
	for _, c := range cs {
		k, err := r.caseFor(c)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if err := harness.CheckConfig(&k.Config); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		if k.Config.Nemesis != c.Fence+"-pause-leader" || k.Config.Cycles != 1 || k.Config.LeaderWork != leaderWorkGap {
			t.Errorf("%s: schedule %q, %d cycles, leader work %v", c.Name, k.Config.Nemesis, k.Config.Cycles, k.Config.LeaderWork)
		}
		// One write per 1 s gap: 1.5 TTL of them is 3, not the 60 of the 50 ms interval,
		// which a gapped leader needs a minute for (the phase timed out, measured).
		if k.Config.Until != "writes=3" {
			t.Errorf("%s: until %q, want writes=3", c.Name, k.Config.Until)
		}
		plain, _ := r.caseFor(Check{Name: "x", Fault: c.Fault, Paced: true, Duration: c.Duration, Resource: ResourceUnfenced})
		if got, want := k.Row.Expect.FailoverMax-plain.Row.Expect.FailoverMax, k.Config.TTL*timeN(outage[c.Name]); got != want {
			t.Errorf("%s: bound adds %v, want %v", c.Name, got, want)
		}
	}
}

// A fence check is judged on the unfenced resource whatever the assessment's resource: its
// fence is the device, so it gets no fenced rerun and its failure fails the assessment.
func TestFenceCheckFailureFailsTheAssessment(t *testing.T) {
	c := Check{Name: "fence-lying", Fault: "fence-lying-pause-leader", Paced: true, Fence: "fence-lying", Resource: ResourceUnfenced}
	u := CheckResult{Check: c, Verdict: harness.VerdictInvalid, Reason: "stale-write-accepted", Reasons: []string{"stale-write-accepted"}}
	if _, ok := FencedRerun(c, u); ok {
		t.Error("a fence check gets a fenced rerun")
	}
	sc := &Scorecard{Target: "recipe etcd-stonith", Store: "etcd", Resource: ResourceFenced,
		Results: []CheckResult{result("fault-free", "valid", false, ""), u}}
	sc.Finish()
	if sc.Verdict != harness.VerdictInvalid || !strings.Contains(sc.Summary, "UNSAFE when its fence device misbehaves (the power-off it relied on did not protect the resource) under fence-lying (stale-write-accepted)") || strings.Contains(sc.Summary, "whether a fence saves it is open") {
		t.Errorf("verdict %s, summary %q: want invalid naming fence-lying", sc.Verdict, sc.Summary)
	}
}

// A valid run is a pass only if a fencing attempt reached the device while the fault was on:
// a power-off, or (unreachable, slow) a status read of a named node.
func TestFenceNotExercised(t *testing.T) {
	res := func(ops ...checkers.FenceOp) *checkers.Results {
		return &checkers.Results{
			Faults: []checkers.FaultWindow{{ID: 1, Kind: "pause", StartT: 100, EndT: 600},
				{ID: 2, Kind: "fence-lying", StartT: 100, EndT: 700}},
			Fences: checkers.FenceResult{Ops: ops, OpsTotal: len(ops)},
		}
	}
	off := func(t int64) checkers.FenceOp { return checkers.FenceOp{Action: history.FenceOff, T: t} }
	if why := fenceUnexercised("fence-lying", res()); !strings.Contains(why, "no fencing attempt reached") {
		t.Errorf("no request: %q", why)
	}
	if why := fenceUnexercised("fence-lying", res(off(50), off(800), checkers.FenceOp{Action: "status", T: 300})); why == "" {
		t.Error("power-offs outside the fault and a status read count as exercised")
	}
	if why := fenceUnexercised("fence-lying", res(off(300))); why != "" {
		t.Errorf("a power-off during the fault: %q", why)
	}
	if why := fenceUnexercised("fence-slow", res(off(300))); !strings.Contains(why, "never took effect") {
		t.Errorf("another kind's fault: %q", why)
	}
	unreachable := func(ops ...checkers.FenceOp) *checkers.Results {
		r := res(ops...)
		r.Faults[1].Kind = "fence-unreachable"
		return r
	}
	inspect := checkers.FenceOp{Action: history.FenceStatus, By: "c2", Target: "c1", T: 300, Result: history.FenceDropped}
	if why := fenceUnexercised("fence-unreachable", unreachable(inspect)); why != "" {
		t.Errorf("a swallowed status read of the target (fence_docker's first step of a power-off): %q", why)
	}
	list := checkers.FenceOp{Action: history.FenceStatus, By: "c2", T: 300, Result: history.FenceDropped}
	if why := fenceUnexercised("fence-unreachable", unreachable(list)); why == "" {
		t.Error("a list of every node (the device's monitor) counts as a fencing attempt")
	}
	inspect.T = 800
	if why := fenceUnexercised("fence-unreachable", unreachable(inspect)); why == "" {
		t.Error("a status read after the fault counts as exercised")
	}
}

func timeN(n int) time.Duration { return time.Duration(n) }

// The header names the resource fence checks are judged on when it differs from the rest.
func TestJudgedTextNamesTheFenceChecks(t *testing.T) {
	fence, plain := Check{Name: "fence-lying", Fence: "fence-lying"}, Check{Name: "pause-leader"}
	if got := judgedText(ResourceFenced, []Check{plain, fence}); !strings.Contains(got, "fence checks: unfenced") {
		t.Errorf("fenced assessment with a fence check: %q", got)
	}
	if got := judgedText(ResourceFenced, []Check{plain}); got != ResourceFenced {
		t.Errorf("fenced assessment without fence checks: %q", got)
	}
	if got := judgedText(ResourceUnfenced, []Check{plain, fence}); got != ResourceUnfenced {
		t.Errorf("unfenced assessment: %q", got)
	}
}

// A recipe whose candidates run on the host's clock (Pacemaker) gets no clock check: it
// would be valid with nothing to show. Its fence checks stay.
func TestNoClockChecksWhereClockFaultsDoNotReach(t *testing.T) {
	cs, skipped, err := PlanWithSkips(Options{Store: "none", Recipe: "pacemaker-stonith", OutDir: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(cs, func(c Check) bool { return strings.HasPrefix(c.Name, "clock-") }) {
		t.Errorf("a clock check planned for pacemaker-stonith: %v", names(cs))
	}
	i := slices.IndexFunc(skipped, func(s Skipped) bool { return s.Name == "clock-bump" })
	if i < 0 || !strings.Contains(skipped[i].Why, "host's clock") {
		t.Errorf("clock-bump not left out with its reason: %+v", skipped)
	}
	if !slices.ContainsFunc(cs, func(c Check) bool { return c.Name == "fence-unreachable" }) {
		t.Errorf("the fence checks went too: %v", names(cs))
	}
	cs, err = Plan(Options{Store: "none", Recipe: "raft", OutDir: "x"})
	if err != nil || !slices.ContainsFunc(cs, func(c Check) bool { return c.Name == "clock-bump" }) {
		t.Errorf("raft lost its clock check: %v %v", names(cs), err)
	}
}
