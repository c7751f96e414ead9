package nemesis

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// startFaults runs spec on e and returns the nemesis once every planned fault started, and
// a wait for the run's end and its HealAll.
func startFaults(t *testing.T, e *fakeEnv, spec string) (*Nemesis, func()) {
	t.Helper()
	n, _, done := startPlanOn(t, e, e, e.topo(), spec, 5*time.Second, -1)
	return n, func() {
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if err := n.HealAll(context.Background()); err != nil {
			t.Errorf("HealAll: %v", err)
		}
	}
}

// runningThreeByThree is threeByThree with every node running (network faults only check
// that a node runs; no signal is sent).
func runningThreeByThree(t *testing.T) *fakeEnv {
	e := threeByThree(t)
	for _, nd := range append(slices.Clone(e.cands), e.store...) {
		nd.pid = os.Getpid()
	}
	return e
}

func hasFaultRule(rules []string, id string) bool {
	return slices.ContainsFunc(rules, func(r string) bool { return strings.HasPrefix(r, "-A ") && strings.Contains(r, "splitbrain-fault-"+id) })
}

// F1: a node restarted while it is cut off comes back cut. Its rules died with its network
// namespace; the nemesis puts them back when told of the start, and the fault-end says so.
func TestCutOutlivesRestartOfTheNodeItHolds(t *testing.T) {
	e := runningThreeByThree(t)
	c1 := e.node("c1")
	n, wait := startFaults(t, e, "partition:shape=isolate,target=node:c1,peer=store,at=0s,for=1s")
	if !hasFaultRule(c1.ruleList(), "1") {
		t.Fatalf("no rule of the cut in c1's namespace: %q", c1.ruleList())
	}
	// A power-cycle (a fence's off and on, a kill and a restart): a fresh namespace.
	if err := c1.Kill(context.Background(), "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	if err := n.NodeStarting(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	// Before c1 starts, each store node stands in for the rules c1's namespace lost.
	for _, s := range e.store {
		if got := countTagged(strings.Join(s.ruleList(), "\n"), "splitbrain-fault-1-bridge"); got != 2 {
			t.Errorf("%s holds %d stand-in rules while c1 restarts, want 2 (in and out): %q", s.name, got, s.ruleList())
		}
	}
	if err := c1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(c1.ruleList()) != 0 {
		t.Fatalf("the fake did not model the lost namespace: %q", c1.ruleList())
	}
	if err := n.NodeStarted(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if !hasFaultRule(c1.ruleList(), "1") {
		t.Errorf("after the restart c1 is not cut while the partition holds: %q", c1.ruleList())
	}
	for _, s := range e.store {
		if rules := s.ruleList(); slices.ContainsFunc(rules, func(r string) bool { return strings.Contains(r, "bridge") }) {
			t.Errorf("%s still holds stand-ins once c1's own rules are back: %q", s.name, rules)
		}
	}
	// A node no cut involves costs nothing.
	before := len(e.node("c2").callList())
	if err := n.NodeStarted(context.Background(), "c2"); err != nil || len(e.node("c2").callList()) != before {
		t.Errorf("NodeStarted(c2) = %v, calls %q: c2 is in no cut", err, e.node("c2").callList())
	}
	wait()
	if len(c1.ruleList()) != 0 {
		t.Errorf("rules left after heal: %q", c1.ruleList())
	}
	ends := e.eventsOf(history.KindFaultEnd)
	if len(ends) != 1 || !strings.Contains(ends[0].Reason, "re-applied on c1 after c1 restarted, its peers holding the cut meanwhile") {
		t.Errorf("fault-end %+v: want the re-application noted", ends)
	}
	// After the heal a restart puts nothing back.
	if err := n.NodeStarted(context.Background(), "c1"); err != nil || len(c1.ruleList()) != 0 {
		t.Errorf("after the heal: %v, rules %q", err, c1.ruleList())
	}
}

// A node that comes back at another address: the peers' rules that named the old one are
// replaced, so the cut still holds against it.
func TestCutFollowsANewAddress(t *testing.T) {
	e := runningThreeByThree(t)
	s1, c1 := e.node("s1"), e.node("c1")
	// s1 cut from every candidate: its rules sit in s1's namespace and name c1's address.
	n, wait := startFaults(t, e, "partition:shape=isolate,target=node:s1,peer=candidates,at=0s,for=1s")
	if !slices.ContainsFunc(s1.ruleList(), func(r string) bool { return strings.Contains(r, c1.ip) }) {
		t.Fatalf("s1's rules do not name c1 (%s): %q", c1.ip, s1.ruleList())
	}
	_ = c1.Kill(context.Background(), "SIGKILL")
	_ = c1.Start(context.Background())
	old := c1.ip
	c1.ip = "10.0.0.99"
	if err := n.NodeStarted(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	rules := s1.ruleList()
	if !slices.ContainsFunc(rules, func(r string) bool { return strings.Contains(r, "10.0.0.99") }) ||
		slices.ContainsFunc(rules, func(r string) bool { return strings.Contains(r, old+"/") || strings.HasSuffix(r, old) }) {
		t.Errorf("s1's rules after c1 moved from %s to 10.0.0.99: %q", old, rules)
	}
	if got := CountFaultRules(strings.Join(rules, "\n"), 1); got != 6 {
		t.Errorf("s1 lists %d rules of the fault, want 6 (in and out per candidate): %q", got, rules)
	}
	wait()
	if len(s1.ruleList()) != 0 {
		t.Errorf("rules left after heal: %q", s1.ruleList())
	}
	if ends := e.eventsOf(history.KindFaultEnd); len(ends) != 1 || !strings.Contains(ends[0].Reason, "at a new address 10.0.0.99") {
		t.Errorf("fault-end %+v: want the move noted", ends)
	}
}

// A kill's heal restarts the node: a partition still in effect holds it again.
func TestKillHealPutsTheCutBack(t *testing.T) {
	e := runningThreeByThree(t)
	c1 := e.node("c1")
	_, wait := startFaults(t, e, "partition:shape=isolate,target=node:c1,peer=store,at=0s,for=2s; kill:target=node:c1,at=100ms,for=200ms")
	deadline := time.Now().Add(10 * time.Second)
	for len(e.eventsOf(history.KindFaultEnd)) == 0 { // the kill's heal: the restart
		if time.Now().After(deadline) {
			t.Fatal("the kill never healed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ends := e.eventsOf(history.KindFaultEnd); ends[0].Fault != "kill" || ends[0].Err != "" {
		t.Fatalf("first fault-end %+v, want the kill's, healed", ends[0])
	}
	if !hasFaultRule(c1.ruleList(), "1") {
		t.Errorf("c1 restarted by the kill's heal is not cut while the partition holds: %q", c1.ruleList())
	}
	wait()
	if len(c1.ruleList()) != 0 {
		t.Errorf("rules left after heal: %q", c1.ruleList())
	}
}
