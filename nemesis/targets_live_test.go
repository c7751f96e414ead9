package nemesis

import (
	"context"
	"strings"
	"testing"
)

// fixedLive is a liveState frozen at one moment of a run.
type fixedLive struct {
	leaders     []Leader
	storeLeader string
}

func (f fixedLive) Leaders() []Leader { return f.leaders }
func (f fixedLive) StoreLeader(context.Context) (string, error) {
	return f.storeLeader, nil
}

func TestLeaderIsNewestTenureStaleLeaderIsAZombie(t *testing.T) {
	topo := Topology{Candidates: []string{"c1", "c2", "c3"}}
	// c1 is a zombie (token 4) listed first, as a map walk or belief order might list it;
	// c3 holds the newest tenure.
	live := fixedLive{leaders: []Leader{{Node: "c1", Token: 4}, {Node: "c3", Token: 9}}}

	got, err := resolveTargets(context.Background(), live, topo, PlannedFault{Target: TargetLeader})
	if err != nil || len(got) != 1 || got[0] != "c3" {
		t.Fatalf("leader resolved to %v (%v), want the newest tenure c3", got, err)
	}
	for pick := uint64(0); pick < 3; pick++ {
		got, err = resolveTargets(context.Background(), live, topo, PlannedFault{Target: TargetStaleLeader, Pick: pick})
		if err != nil || len(got) != 1 || got[0] != "c1" {
			t.Fatalf("stale-leader (pick %d) resolved to %v (%v), want the zombie c1", pick, got, err)
		}
	}

	// Two zombies: the seeded pick chooses among them, never the newest.
	live.leaders = append(live.leaders, Leader{Node: "c2", Token: 7})
	seen := map[string]bool{}
	for pick := uint64(0); pick < 4; pick++ {
		got, _ = resolveTargets(context.Background(), live, topo, PlannedFault{Target: TargetStaleLeader, Pick: pick})
		if len(got) != 1 || got[0] == "c3" {
			t.Fatalf("stale-leader (pick %d) resolved to %v; the newest tenure is not stale", pick, got)
		}
		seen[got[0]] = true
	}
	if !seen["c1"] || !seen["c2"] {
		t.Fatalf("picks reached only %v of the zombies c1, c2", seen)
	}

	// One believer: no zombie exists, and the error says who believes.
	live.leaders = []Leader{{Node: "c2", Token: 3}}
	_, err = resolveTargets(context.Background(), live, topo, PlannedFault{Target: TargetStaleLeader})
	if err == nil || !strings.Contains(err.Error(), "c2 (token 3)") {
		t.Fatalf("stale-leader with one believer: err %v, want one naming c2 (token 3)", err)
	}
	live.leaders = nil
	if _, err = resolveTargets(context.Background(), live, topo, PlannedFault{Target: TargetLeader}); err == nil {
		t.Fatal("leader with no believer resolved to a node")
	}
}

// TestFollowerTargetSkipsDownCandidates: target=follower never picks a candidate that is
// down (killed, frozen) while a running follower exists, whatever the seeded pick; with every
// follower down it still names one (the fault then records why it could not apply).
func TestFollowerTargetSkipsDownCandidates(t *testing.T) {
	env := newFakeEnv(t, []string{"c1", "c2", "c3", "c4"}, nil)
	env.leaders = []Leader{{"c1", 3}}
	env.cands[1].running = false // c2 killed
	env.cands[3].paused = true   // c4 frozen
	topo := Topology{Candidates: []string{"c1", "c2", "c3", "c4"}}
	for pick := range uint64(8) {
		got, err := resolveTargets(context.Background(), env, topo, PlannedFault{Target: TargetFollower, Pick: pick})
		if err != nil || len(got) != 1 || got[0] != "c3" {
			t.Fatalf("pick %d: got %v, %v; want [c3], the one running follower", pick, got, err)
		}
	}
	env.cands[2].running = false
	got, err := resolveTargets(context.Background(), env, topo, PlannedFault{Target: TargetFollower, Pick: 1})
	if err != nil || len(got) != 1 || got[0] == "c1" {
		t.Fatalf("every follower down: got %v, %v; want one of them", got, err)
	}
}
