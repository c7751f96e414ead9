package assess

import (
	"fmt"
	"slices"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
)

// ReasonZombie is the reason code assess gives a run in which an old leader kept leading
// beside a newer one until the harness stopped it: the candidate never learns that it lost
// its lease. A fence rejects its writes, but nothing ends its belief, so no fence makes it
// safe (anything it does besides the fenced writes is a second leader's), and the check is
// unsafe at once, without a fenced rerun.
const ReasonZombie = "zombie-leader"

// zombieGrace is how long after the last fault healed (and after its successor's election)
// a leader may go on believing before it counts as never finding out, in TTLs: a candidate
// that checks its lease stops within one renewal of the heal (measured: every correct
// example within 0.23 s; docs/assess.md), one that never checks leads on until teardown.
const zombieGrace = 0.5

// zombieOf returns the story of a zombie leader in a run's results, "" when there is none:
// a tenure that had stale writes accepted while a newer leader led, still believed when the
// teardown began (the harness stops leaders last, after the followers exited), and kept
// believing at least zombieGrace TTLs after the last fault healed and its successor was
// elected. A fault still open at the end, or a run without a teardown, proves nothing here.
func zombieOf(res *checkers.Results) string {
	if res.Run.TeardownT == 0 {
		return ""
	}
	var lastHeal int64
	for _, f := range res.Faults {
		if f.Open {
			return ""
		}
		lastHeal = max(lastHeal, f.EndT)
	}
	ttl := res.Params.LeaseTTL.D()
	if ttl <= 0 {
		ttl = 2 * time.Second
	}
	grace := int64(zombieGrace * float64(ttl))
	stale := map[int]int{} // tenure -> stale writes accepted
	for _, w := range res.Resource.StaleAccepted {
		stale[w.Tenure]++
	}
	tenures := res.Tenures.Tenures
	for _, old := range tenures {
		if old.Open {
			old.EndT = max(old.EndT, res.Run.EndT)
		}
		if stale[old.ID] == 0 || old.EndT < res.Run.TeardownT {
			continue
		}
		i := slices.IndexFunc(tenures, func(n checkers.Tenure) bool {
			return n.Node != old.Node && n.StartT > old.StartT && n.StartT < old.EndT
		})
		if i < 0 {
			continue
		}
		newer := tenures[i]
		from := max(lastHeal, newer.StartT)
		if old.EndT-from < grace {
			continue
		}
		return fmt.Sprintf("%s (token %d) kept leading for %s after the fault healed, beside %s (token %d, elected at %s), with %d stale writes accepted, until the harness stopped it at teardown: it never finds out it lost its lease, so only a fence stops its writes",
			old.Node, old.Token, secs(time.Duration(old.EndT-from)), newer.Node, newer.Token, at(newer.StartT-res.Run.StartT), stale[old.ID])
	}
	return ""
}

// at is a run-relative time as the reports print it.
func at(d int64) string { return fmt.Sprintf("+%.1fs", time.Duration(d).Seconds()) }

// applyZombie makes a zombie leader the first reason of res, with its story, and one no
// fence prevents.
func applyZombie(res *CheckResult, story string) {
	if story == "" {
		return
	}
	res.Reasons = append([]string{ReasonZombie}, slices.DeleteFunc(res.Reasons, func(s string) bool { return s == ReasonZombie })...)
	res.Reason, res.Explanation = ReasonZombie, story
	res.Unfenceable = appendNew(res.Unfenceable, ReasonZombie)
}
