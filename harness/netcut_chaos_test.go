//go:build chaos

package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// A node killed and restarted while it is cut off stays cut until the cut heals (F1), as a
// power-cycled machine behind a cut switch port does: its rules died with its namespace and
// the nemesis puts them back. c1 is cut from the etcd cluster for 10 s and killed 1 s into
// the cut for 1 s; c2 and c3 are down for the cut's first 9 s, so the restarted c1 is the only candidate: left
// uncut it is elected within about a TTL of its restart (the old leader's lease runs out),
// cut it cannot be until the cut heals.
func TestCutHoldsANodeRestartedInside(t *testing.T) {
	cfg := baseConfig(t, "etcd", "etcd-election")
	// The kills start on the cut's fault-start, recorded once its rules are listed: timed
	// at 0 s and 1 s, the kill of c1 came while the cut's rules were still going in at load
	// 10 (the cut then failed: "c1 is not running").
	cfg.Nemesis = "partition:shape=isolate,target=node:c1,peer=store,mode=reject,at=0s,for=10s;" +
		"kill:target=node:c1,on=fault-start,after=1s,for=1s,count=1;" +
		"kill:target=node:c2,on=fault-start,for=9s,count=1;kill:target=node:c3,on=fault-start,for=9s,count=1"
	// The phase ends when every fault healed: a trigger whose after+for would outlast the
	// phase never fires, and at load 45 the cut took 3.7 s to go in, so c2's and c3's 9 s
	// kills no longer fit a 12 s clock (2026-11-29). 45 s is only the timeout.
	cfg.Until, cfg.FaultTime = "faults", 45*time.Second
	// What the run is for is c1 back up while the cut still holds: the kill heals (its
	// fault-end) once c1 has started again. That takes 1-2 s, but at load 50 it took 10 s and
	// came after the cut's heal had begun (2026-11-29), so the run proved nothing about the
	// re-application; no event can hold a cut open until a restart, so such a run is run again.
	var evs []history.Event
	var out *Outcome
	var cut, cutEnd, restart *history.Event
	for try := 1; ; try++ {
		out, evs = runAndRead(t, runCtx(t), cfg)
		cut, cutEnd, restart = nil, nil, nil
		var restarted *history.Event // the kill's fault-end: c1 running again
		for i := range evs {
			e := &evs[i]
			switch {
			case e.Kind == history.KindFaultStart && e.Fault == "partition":
				cut = e
			case e.Kind == history.KindFaultEnd && cut != nil && e.FaultID == cut.FaultID:
				cutEnd = e
			case e.Kind == history.KindFaultEnd && e.Fault == "kill" && len(e.Targets) == 1 && e.Targets[0] == "c1":
				restarted = e
			case e.Kind == history.KindProcessStart && e.Node == "c1" && cut != nil && cutEnd == nil:
				restart = e
			}
		}
		if cut == nil || cutEnd == nil || restarted == nil {
			t.Fatalf("want the cut, its heal and c1 restarted; got cut %v, heal %v, kill healed %v", cut != nil, cutEnd != nil, restarted != nil)
		}
		if restarted.T < cut.T+int64(10*time.Second) {
			if restart == nil {
				t.Fatal("c1 was running again before the cut's heal began, yet no process-start of c1 came inside the cut")
			}
			break
		}
		if try == 3 {
			t.Fatalf("in %d runs c1 was never up again before the cut's heal began (last: %v after the cut's start): the machine is too loaded for this test", try, time.Duration(restarted.T-cut.T))
		}
		t.Logf("run %d: c1 was up again %v after the cut's start, after its heal began: running again", try, time.Duration(restarted.T-cut.T))
	}
	// This machine runs the harness as root beside the engine: rules go in from the host, and
	// the run's log says so (TestHostNetnsReachesTheContainersNamespaceOnly tests that way).
	if b, err := os.ReadFile(filepath.Join(out.RunDir, LogsDir, HarnessLog)); err != nil || !strings.Contains(string(b), "network rules: from the host in each node's namespace") {
		t.Errorf("logs/harness.log does not say the rules went in from the host (%v)", err)
	}
	if !strings.Contains(cutEnd.Reason, "re-applied on c1 after c1 restarted") {
		t.Errorf("the cut's fault-end says %q: want the re-application recorded", cutEnd.Reason)
	}
	// The cut holds for its for=10s from its fault-start; the heal then takes its rules off,
	// and its fault-end is stamped once every node's are gone (0.6 s later at load 10, and
	// the restarted c1 was elected in between on 2026-11-29).
	healFrom := cut.T + int64(10*time.Second)
	for _, e := range evs {
		if e.Kind == history.KindElected && e.Node == "c1" && e.T > restart.T && e.T < healFrom {
			t.Errorf("c1 was elected %v after its restart, %v before the cut's heal began: the restarted node was not cut",
				time.Duration(e.T-restart.T), time.Duration(healFrom-e.T))
		}
	}
	if evs[len(evs)-1].Kind != history.KindRunEnd {
		t.Errorf("history does not end with run-end")
	}
}
