package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
)

// TestStorelessRefusesStoreFaults: a --store none run refuses, before anything starts, every
// fault that needs a store, and accepts the candidate-only shapes.
func TestStorelessRefusesStoreFaults(t *testing.T) {
	base := func(nem string) Config {
		return Config{Store: "none", Recipe: "raft", Nodes: 5, FaultTime: 10 * time.Second, Nemesis: nem, StoreRoot: t.TempDir()}
	}
	for _, ok := range []string{"none", "kill-leader", "pause-leader", "partition:shape=halves,among=candidates,for=8s",
		"partition:shape=isolate,for=3xTTL", "loss:target=leader,peer=candidates,p=0.3,for=2s",
		"partition:shape=one-way,peer=candidates", "clock:op=bump,target=leader,delta=-3xTTL,for=3xTTL"} {
		c := base(ok)
		if err := CheckConfig(&c); err != nil {
			t.Errorf("%s: refused: %v", ok, err)
		}
	}
	for nem, want := range map[string]string{
		"partition-leader-from-store":               "shape=leader-from-store",
		"partition-store-majority":                  "shape=store-majority",
		"loss":                                      "peer=store",
		"partition:shape=halves,among=store":        "among=store",
		"partition:shape=bridge":                    "give among=candidates",
		"partition:shape=one-way":                   "give peer=candidates",
		"pause:target=store-leader":                 "target=store-leader aims at the store",
		"kill:target=all-store":                     "target=all-store",
		"partition:shape=isolate,peer=store-leader": "peer=store-leader",
	} {
		c := base(nem)
		err := CheckConfig(&c)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--store none") {
			t.Errorf("%s: error %v, want it to say %q and name --store none", nem, err, want)
		}
	}
	c := base("none")
	c.StoreNodes = 3
	if err := CheckConfig(&c); err == nil || !strings.Contains(err.Error(), "drop --store-nodes") {
		t.Errorf("--store-nodes with --store none: %v", err)
	}
	c = base("none")
	c.Recipe = "etcd-election"
	if err := CheckConfig(&c); err == nil || !strings.Contains(err.Error(), "recipes for none: bully, ") || !strings.Contains(err.Error(), ", raft, ring") {
		t.Errorf("store recipe on --store none: %v", err)
	}
}

// TestRecipeWithoutClockRefusesClockFaults: a recipe whose candidates run on the host's clock
// (Pacemaker) refuses clock faults aimed at them before anything starts, naming why; its other
// faults are taken.
func TestRecipeWithoutClockRefusesClockFaults(t *testing.T) {
	base := func(nem string) Config {
		return Config{Store: "none", Recipe: "pacemaker-stonith", Nodes: 3, FaultTime: 30 * time.Second, Nemesis: nem, StoreRoot: t.TempDir()}
	}
	for _, ok := range []string{"none", "pause-leader", "kill-leader", "fence-lying-pause-leader"} {
		c := base(ok)
		if err := CheckConfig(&c); err != nil {
			t.Errorf("%s: refused: %v", ok, err)
		}
	}
	for _, nem := range []string{"clock-bump-leader", "clock:op=bump,target=random-candidate,delta=-3xTTL,for=3xTTL",
		"pause:target=leader,on=write:3,count=1; clock:target=leader,on=fault-end,count=1"} {
		c := base(nem)
		err := CheckConfig(&c)
		if err == nil || !strings.Contains(err.Error(), "clock faults do not reach them") || !strings.Contains(err.Error(), "pacemaker-stonith") {
			t.Errorf("%s: error %v, want a refusal naming the recipe and why", nem, err)
		}
	}
	c := Config{Store: "none", Recipe: "raft", Nodes: 3, FaultTime: 10 * time.Second, Nemesis: "clock-bump-leader", StoreRoot: t.TempDir()}
	if err := CheckConfig(&c); err != nil {
		t.Errorf("a recipe whose clock faults apply refused one: %v", err)
	}
}

// The warmup of an event-ended run waits up to a slow recipe's start bound (it ends on the
// first leader's writes anyway); a time-ended run keeps its length, as does a fast recipe.
func TestWarmupWaitsForASlowRecipesFirstLeader(t *testing.T) {
	slow := runtime.Timing{StartBound: 90 * time.Second}
	if got := warmupWait(3*time.Second, slow, true); got != 90*time.Second {
		t.Errorf("event-ended, slow recipe: %v", got)
	}
	if got := warmupWait(3*time.Second, slow, false); got != 3*time.Second {
		t.Errorf("time-ended: %v", got)
	}
	if got := warmupWait(3*time.Second, runtime.Timing{}, true); got != 3*time.Second {
		t.Errorf("a recipe without a start bound: %v", got)
	}
	r, err := lookupRecipe("pacemaker-stonith", "none", &Config{TTL: 2 * time.Second})
	if err != nil || r.Timing.StartBound < 47*time.Second {
		t.Errorf("pacemaker-stonith's start bound %v (%v): its first leader comes up to 47 s after the start", r.Timing.StartBound, err)
	}
}
