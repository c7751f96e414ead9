//go:build chaos

package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// A power-off of a frozen node takes effect at once, as a power switch does: the cgroup v1
// freezer would hold the SIGKILL pending until the thaw, so the device thaws the node right
// after the kill. The leader of etcd-stonith is frozen on its 3rd write; its successor powers
// it off while it is frozen, and the answer comes within seconds, done and off, with the kill
// recorded as taken through a thaw and the process's exit before the freeze would have ended.
func TestFencePowersOffAFrozenNode(t *testing.T) {
	cfg := baseConfig(t, "etcd", "etcd-stonith")
	cfg.ResourceMode = "unfenced"
	cfg.Nemesis = "freeze:target=leader,on=write:3,for=3xTTL,count=1"
	cfg.Until, cfg.FaultTime = "faults", 40*time.Second
	out, evs := runAndRead(t, runCtx(t), cfg)
	var frozen, req, reply, kill, exit, heal *history.Event
	for i := range evs {
		e := &evs[i]
		switch {
		case e.Kind == history.KindFaultStart && e.Fault == "freeze" && frozen == nil:
			frozen = e
		case e.Kind == history.KindFenceRequest && e.Action == history.FenceOff && frozen != nil && slices0(frozen.Targets) == e.Target && req == nil:
			req = e
		case req != nil && e.Kind == history.KindFenceReply && e.FenceID == req.FenceID:
			reply = e
		case req != nil && e.Kind == history.KindSignal && strings.HasPrefix(e.Reason, "fence ") && e.Node == req.Target && kill == nil:
			kill = e
		case req != nil && e.Kind == history.KindProcessExit && e.Node == req.Target && exit == nil:
			exit = e
		case e.Kind == history.KindFaultEnd && frozen != nil && e.FaultID == frozen.FaultID:
			heal = e
		}
	}
	if frozen == nil || req == nil || reply == nil || kill == nil || exit == nil || heal == nil {
		t.Fatalf("want a freeze, a power-off of the frozen node, its answer, kill and exit, and the heal; got freeze %v request %v reply %v kill %v exit %v heal %v",
			frozen != nil, req != nil, reply != nil, kill != nil, exit != nil, heal != nil)
	}
	if req.T > heal.T {
		// The successor fences once the lease expired (1.2-2.3 s after the freeze, matrix
		// notes), well inside the 3xTTL freeze.
		t.Fatalf("the power-off came after the thaw (%v after the freeze): nothing frozen was fenced, the run proved nothing", time.Duration(req.T-frozen.T))
	}
	if reply.Result != history.FenceDone || reply.Power != "off" {
		t.Errorf("the power-off of a frozen node was answered %s/%s (%s); want done/off", reply.Result, reply.Power, reply.Reason)
	}
	if !strings.Contains(kill.Reason, "frozen") {
		t.Errorf("kill %q does not say the node was thawed to take it", kill.Reason)
	}
	if exit.T > heal.T || time.Duration(reply.T-req.T) > 5*time.Second {
		t.Errorf("the frozen node's process exited %v after the request (the freeze healed %v after it), answered after %v: the kill waited for the thaw",
			time.Duration(exit.T-req.T), time.Duration(heal.T-req.T), time.Duration(reply.T-req.T))
	}
	res, err := checkers.ReadResults(out.RunDir + "/" + ResultsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range res.Fences.Ops {
		if op.ID == req.FenceID && (op.DeathT == 0 || op.DeathT > exit.T || op.AliveAtAnswer) {
			t.Errorf("fence op %+v: want the kill as its death, before the exit the engine reported, not alive at the answer", op)
		}
	}
	if out.HealError != "" {
		t.Errorf("the freeze's heal failed on the powered-off node: %s", out.HealError)
	}
}

func slices0(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
