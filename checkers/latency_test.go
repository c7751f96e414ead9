package checkers

import (
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness/history"
)

// killLeader: c1 killed at 500 ms; c2 elected at 2500 ms; heal phase 3000, teardown 4000.
func killLeader() *hb {
	h := newHB()
	h.phase(2, history.PhaseWarmup).campaign(5, "c1").campaign(5, "c2")
	h.elected(10, "c1", 1).writes(10, 500, "c1", 1)
	h.phase(400, history.PhaseFaults).fault(500, 1, "kill", "c1").heal(600, 1)
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
	// Bound 1s TTL + 1s slack = 2s < 2.04s of unavailability.
	tight := Params{LeaseTTL: Duration(time.Second)}
	r := check(t, killLeader(), tight)
	wantVerdict(t, r, Valid) // liveness is a finding unless required
	if r.Latency.LivenessOK || codes(r.Findings)["unavailable-beyond-bound"] != 1 {
		t.Fatalf("%+v", r.Latency.LivenessFailures)
	}
	tight.Require = []string{RequireLiveness}
	wantVerdict(t, check(t, killLeader(), tight), Invalid)
	loose := Params{LeaseTTL: Duration(time.Second), Slack: Duration(1100 * time.Millisecond), Require: []string{RequireLiveness}}
	wantVerdict(t, check(t, killLeader(), loose), Valid)
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
