package checkers

import (
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// killLeader: c1 killed at 500 ms; c2 elected at 2500 ms; heal phase 3000, teardown 4000.
func killLeader() *hb {
	h := newHB()
	h.phase(2, history.PhaseWarmup).campaign(5, "c1").campaign(5, "c2")
	h.elected(10, "c1", 1).writes(10, 500, "c1", 1)
	h.phase(400, history.PhaseFaults).fault(500, 1, "kill", "c1")
	h.add(history.Event{T: 500 * ms, Kind: history.KindProcessExit, Node: "c1"}).heal(600, 1)
	h.elected(2500, "c2", 2).writes(2500, 4000, "c2", 2)
	h.phase(3000, history.PhaseHeal).phase(3100, history.PhaseRecovery).phase(4000, history.PhaseTeardown)
	h.signal(4001, "c2", "SIGTERM").stepDown(4002, "c2", "sigterm")
	return h.end(4100)
}

func TestFailoverLatency(t *testing.T) {
	r := check(t, killLeader(), Params{LeaseTTL: Duration(2 * time.Second)})
	wantVerdict(t, r, Valid)
	l := r.Latency
	if len(l.Samples) != 1 {
		t.Fatalf("samples %+v", l.Samples)
	}
	s := l.Samples[0]
	if s.Outcome != OutcomeFailover || !s.TouchedLeader || s.Leader != "c1" || s.NewLeader != "c2" ||
		s.ElectionNs != 2000*ms || s.FirstWriteNs != 2001*ms || s.ExceedsBound {
		t.Fatalf("sample %+v", s)
	}
	if len(l.ByKind) != 1 || l.ByKind[0].Kind != "kill" || l.ByKind[0].Election.MedianNs != 2000*ms {
		t.Fatalf("by kind %+v", l.ByKind)
	}
	if l.UnavailableCount != 1 || l.Unavailability[0].DurationNs != 2040*ms || l.Unavailability[0].FaultIDs[0] != 1 {
		t.Fatalf("unavailability %+v", l.Unavailability)
	}
	if !l.Stable.Found || l.Stable.Node != "c2" || l.Stable.StableNs != 0 || l.Stable.FirstWriteNs != ms {
		t.Fatalf("stable %+v", l.Stable)
	}
	if !l.LivenessOK || l.InitialElectionNs != 9*ms {
		t.Fatalf("liveness %+v initial %d", l.LivenessFailures, l.InitialElectionNs)
	}
}

func TestLivenessBoundNearMiss(t *testing.T) {
	// The kill heals (restart) at 600 ms; c2's first write is accepted at 2501 ms: 1.901 s
	// after the heal. The window without writes (460 ms .. 2501 ms) is 2.04 s.
	tight := Params{LeaseTTL: Duration(time.Second), Slack: Duration(800 * time.Millisecond), Require: []string{RequireLiveness}} // bound 1.8 s
	r := check(t, killLeader(), tight)
	wantVerdict(t, r, Invalid)
	if codes(r.Reasons)["no-leader-after-heal"] != 1 || r.Latency.LivenessOK {
		t.Fatalf("reasons %+v liveness %+v", r.Reasons, r.Latency.LivenessFailures)
	}
	tight.Require = nil
	r = check(t, killLeader(), tight)
	wantVerdict(t, r, Valid) // liveness is a finding unless required
	if codes(r.Findings)["no-leader-after-heal"] != 1 {
		t.Fatalf("findings %+v", r.Findings)
	}

	// Near miss: bound 2 s. The leader is back 1.901 s after the heal, in time; the 2.04 s
	// without writes while the fault lasted is the fault's cost, a finding even when
	// liveness is required.
	loose := Params{LeaseTTL: Duration(time.Second), Slack: Duration(time.Second), Require: []string{RequireLiveness}}
	r = check(t, killLeader(), loose)
	wantVerdict(t, r, Valid)
	if !r.Latency.LivenessOK || codes(r.Findings)["unavailable-beyond-bound"] != 1 || codes(r.Reasons)["no-leader-after-heal"] != 0 {
		t.Fatalf("reasons %+v findings %+v", r.Reasons, r.Findings)
	}
}

func TestLivenessWaitsForEveryFaultToHeal(t *testing.T) {
	// Fault 1 heals at 600 ms while fault 2 (600..3000 ms, e.g. a store partition) still
	// runs; writes resume at 3100 ms, 100 ms after the last heal. Only the last heal counts.
	h := newHB()
	h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 500, "c1", 1)
	h.fault(400, 1, "pause", "c1").fault(450, 2, "partition", "c1").heal(600, 1).heal(3000, 2)
	h.writes(3100, 4000, "c1", 1)
	p := Params{LeaseTTL: Duration(time.Second), Require: []string{RequireLiveness}}
	r := check(t, h.end(4100), p)
	wantVerdict(t, r, Valid)
	if !r.Latency.LivenessOK {
		t.Fatalf("liveness %+v", r.Latency.LivenessFailures)
	}
	// Near miss: writes resume 2.5 s after the last heal, beyond the 2 s bound.
	h = newHB()
	h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 500, "c1", 1)
	h.fault(400, 1, "pause", "c1").fault(450, 2, "partition", "c1").heal(600, 1).heal(3000, 2)
	h.writes(5500, 6000, "c1", 1)
	r = check(t, h.end(6100), p)
	wantVerdict(t, r, Invalid)
	if n := codes(r.Reasons)["no-leader-after-heal"]; n != 1 {
		t.Fatalf("want one no-leader-after-heal, got %d: %+v", n, r.Reasons)
	}
}

func TestNoStableLeader(t *testing.T) {
	h := newHB()
	h.campaign(5, "c1").campaign(5, "c2").elected(10, "c1", 1).writes(10, 300, "c1", 1)
	h.fault(300, 1, "pause", "c1").elected(400, "c2", 2).writes(400, 800, "c2", 2).heal(900, 1)
	r := check(t, h.end(1000), Params{Require: []string{RequireLiveness}})
	wantVerdict(t, r, Invalid)
	if codes(r.Reasons)["no-stable-leader"] != 1 || r.Latency.Stable.Leaders != 2 {
		t.Fatalf("%+v %+v", r.Reasons, r.Latency.Stable)
	}
	if s := r.Latency.Samples[0]; s.Outcome != OutcomeFailover || s.ElectionNs != 100*ms {
		t.Fatalf("%+v", s)
	}
}

func TestHandoffAndLeaderKept(t *testing.T) {
	h := newHB()
	h.campaign(5, "c1").campaign(5, "c2").elected(10, "c1", 1).writes(10, 500, "c1", 1)
	h.fault(520, 1, "pause", "c2").heal(600, 1) // follower paused: leader kept
	h.writes(600, 1000, "c1", 1)
	h.signal(1000, "c1", "SIGTERM").stepDown(1005, "c1", "sigterm")
	h.add(history.Event{T: 1010 * ms, Kind: history.KindProcessExit, Node: "c1"})
	h.elected(1020, "c2", 2).writes(1020, 1500, "c2", 2)
	r := check(t, h.end(1600), Params{})
	wantVerdict(t, r, Valid)
	var kept, handoff bool
	for _, s := range r.Latency.Samples {
		switch s.Kind {
		case "pause":
			kept = s.Outcome == OutcomeLeaderKept && !s.TouchedLeader
		case "handoff":
			handoff = s.Outcome == OutcomeFailover && s.ElectionNs == 20*ms && s.FirstWriteNs == 21*ms
		}
	}
	if !kept || !handoff {
		t.Fatalf("samples %+v", r.Latency.Samples)
	}
}

func TestStats(t *testing.T) {
	var xs []int64
	for i := int64(100); i >= 1; i-- {
		xs = append(xs, i)
	}
	s := statsOf(xs)
	if s.Count != 100 || s.MedianNs != 50 || s.P99Ns != 99 || s.MaxNs != 100 {
		t.Fatalf("%+v", s)
	}
	if statsOf(nil).Count != 0 || statsOf([]int64{7}).P99Ns != 7 {
		t.Fatal("edge cases")
	}
}

func TestHealFailedIsUnknown(t *testing.T) {
	build := func(healErr string, healed bool) *hb {
		h := newHB()
		h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 1000, "c1", 1)
		h.fault(300, 1, "partition", "c1")
		if healed {
			h.add(history.Event{T: 400 * ms, Kind: history.KindFaultEnd, FaultID: 1, Err: healErr})
		}
		return h.end(1100)
	}
	for _, c := range []struct {
		name string
		h    *hb
	}{{"heal error", build("iptables: chain still present", true)}, {"never healed", build("", false)}} {
		r := check(t, c.h, Params{})
		wantVerdict(t, r, Unknown)
		if codes(r.Reasons)["heal-failed"] != 1 {
			t.Fatalf("%s: reasons %+v", c.name, r.Reasons)
		}
	}
	// Near miss: the same run healed cleanly.
	wantVerdict(t, check(t, build("", true), Params{}), Valid)
}

func TestStallWithoutFaultIsALivenessFailure(t *testing.T) {
	// No fault at all: writes stop at 1000 ms and resume at 6000 ms (bound 4 s).
	h := newHB()
	h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 1000, "c1", 1).writes(6000, 7000, "c1", 1)
	r := check(t, h.end(7100), Params{LeaseTTL: Duration(2 * time.Second), Require: []string{RequireLiveness}})
	wantVerdict(t, r, Invalid)
	if codes(r.Reasons)["unavailable-without-fault"] != 1 {
		t.Fatalf("reasons %+v", r.Reasons)
	}
	// Near miss: the same stall while a pause is in effect from 1100 ms on: only 100 ms of it
	// fall in quiet time, the rest is the fault's cost (a finding).
	h = newHB()
	h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 1000, "c1", 1)
	h.fault(1100, 1, "pause", "c1").heal(5950, 1).writes(6000, 7000, "c1", 1)
	r = check(t, h.end(7100), Params{LeaseTTL: Duration(2 * time.Second), Require: []string{RequireLiveness}})
	wantVerdict(t, r, Valid)
	if codes(r.Findings)["unavailable-beyond-bound"] != 1 {
		t.Fatalf("findings %+v", r.Findings)
	}
}

func TestFailedHealIsNoHealForLiveness(t *testing.T) {
	// The partition's heal failed; nothing is written afterwards. That is heal-failed
	// (unknown), not a liveness failure after a heal that did not happen.
	h := newHB()
	h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 300, "c1", 1)
	h.fault(300, 1, "partition", "c1")
	h.add(history.Event{T: 900 * ms, Kind: history.KindFaultEnd, FaultID: 1, Err: "rules still listed"})
	r := check(t, h.end(9000), Params{LeaseTTL: Duration(time.Second), Require: []string{RequireLiveness}})
	wantVerdict(t, r, Unknown)
	if c := codes(r.Reasons); c["heal-failed"] != 1 || c["no-leader-after-heal"] != 0 {
		t.Fatalf("reasons %+v", r.Reasons)
	}
}

// A killed leader's restarted process that wins again is a new leader: the kill is measured
// as a failover (from the kill to that election), not as a leader that rode the fault out.
func TestKilledLeaderRestartedAndReElectedIsFailover(t *testing.T) {
	h := newHB()
	h.phase(2, history.PhaseWarmup).campaign(5, "c2").elected(10, "c2", 1).writes(10, 500, "c2", 1)
	h.phase(400, history.PhaseFaults).fault(500, 1, "kill", "c2")
	h.add(history.Event{T: 510 * ms, Kind: history.KindProcessExit, Node: "c2"})
	h.heal(700, 1).add(history.Event{T: 700 * ms, Kind: history.KindProcessStart, Node: "c2"})
	h.campaign(720, "c2").elected(900, "c2", 2).writes(900, 1500, "c2", 2)
	h.phase(1500, history.PhaseTeardown)
	r := check(t, h.end(1600), Params{})
	wantVerdict(t, r, Valid)
	if s := r.Latency.Samples[0]; s.Outcome != OutcomeFailover || s.NewLeader != "c2" || s.ElectionNs != 400*ms || r.Latency.ByKind[0].Failovers != 1 {
		t.Fatalf("killed c2, restarted c2 elected: %+v", s)
	}
}

// A leader that re-wins its own lease after a fault (c2 → c2) is no failover; another node
// winning is one.
func TestReElectedLeaderIsNoFailover(t *testing.T) {
	mk := func(winner string) *Results {
		h := newHB()
		h.phase(2, history.PhaseWarmup).campaign(5, "c2").elected(10, "c2", 1).writes(10, 500, "c2", 1)
		h.phase(400, history.PhaseFaults).fault(500, 1, "clock", "c2")
		h.stepDown(600, "c2", "lease expired on the candidate clock").campaign(601, winner).elected(700, winner, 2)
		h.heal(800, 1).writes(700, 1500, winner, 2)
		h.phase(1500, history.PhaseTeardown)
		return check(t, h.end(1600), Params{})
	}
	same := mk("c2")
	wantVerdict(t, same, Valid)
	if s := same.Latency.Samples[0]; s.Outcome != OutcomeLeaderKept || s.ElectionNs != -1 || same.Latency.ByKind[0].Failovers != 0 {
		t.Fatalf("c2 → c2 counted as a failover: %+v", s)
	}
	other := mk("c1")
	wantVerdict(t, other, Valid)
	if s := other.Latency.Samples[0]; s.Outcome != OutcomeFailover || s.NewLeader != "c1" || s.ElectionNs != 200*ms {
		t.Fatalf("c2 → c1: %+v", s)
	}
}
