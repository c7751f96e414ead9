//go:build chaos

package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// A node killed and restarted while it is cut off stays cut until the cut heals (F1), as a
// power-cycled machine behind a cut switch port does: its rules died with its namespace and
// the nemesis puts them back. c1 is cut from the etcd cluster for 10 s and killed at 1 s for
// 1 s; c2 and c3 are down from 0 s to 9 s, so the restarted c1 is the only candidate: left
// uncut it is elected within about a TTL of its restart (the old leader's lease runs out),
// cut it cannot be until the cut heals.
func TestCutHoldsANodeRestartedInside(t *testing.T) {
	cfg := baseConfig(t, "etcd", "etcd-election")
	cfg.Nemesis = "partition:shape=isolate,target=node:c1,peer=store,mode=reject,at=0s,for=10s;" +
		"kill:target=node:c1,at=1s,for=1s;kill:target=node:c2,at=0s,for=9s;kill:target=node:c3,at=0s,for=9s"
	cfg.FaultTime = 12 * time.Second
	_, evs := runAndRead(t, runCtx(t), cfg)
	var cut, cutEnd, restart *history.Event
	for i := range evs {
		e := &evs[i]
		switch {
		case e.Kind == history.KindFaultStart && e.Fault == "partition":
			cut = e
		case e.Kind == history.KindFaultEnd && cut != nil && e.FaultID == cut.FaultID:
			cutEnd = e
		case e.Kind == history.KindProcessStart && e.Node == "c1" && cut != nil && cutEnd == nil:
			restart = e
		}
	}
	if cut == nil || cutEnd == nil || restart == nil {
		t.Fatalf("want the cut, c1's restart inside it and the heal; got cut %v, restart %v, heal %v", cut != nil, restart != nil, cutEnd != nil)
	}
	if !strings.Contains(cutEnd.Reason, "re-applied on c1 after c1 restarted") {
		t.Errorf("the cut's fault-end says %q: want the re-application recorded", cutEnd.Reason)
	}
	for _, e := range evs {
		if e.Kind == history.KindElected && e.Node == "c1" && e.T > restart.T && e.T < cutEnd.T {
			t.Errorf("c1 was elected %v after its restart, %v before the cut healed: the restarted node was not cut",
				time.Duration(e.T-restart.T), time.Duration(cutEnd.T-e.T))
		}
	}
	if evs[len(evs)-1].Kind != history.KindRunEnd {
		t.Errorf("history does not end with run-end")
	}
}
