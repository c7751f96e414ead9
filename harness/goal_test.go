package harness

import (
	"testing"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// Warmup and recovery end on a leader at work (its first accepted write), not on a fault-free
// goal's 100 writes: those are the faults phase's.
func TestWarmupAndRecoveryEndOnALeaderAtWork(t *testing.T) {
	for _, tc := range []struct {
		goalWrites, need int
	}{{100, 1}, {20, 1}, {3, 1}, {1, 1}, {0, 1}} {
		g := newPhaseGoals(checkers.Goal{Writes: tc.goalWrites})
		for _, phase := range []string{history.PhaseWarmup, history.PhaseRecovery} {
			g.observe(history.Event{Source: history.SourceHarness, Kind: history.KindPhase, Phase: phase})
			for w := 1; w <= tc.need; w++ {
				select {
				case <-g.leaderWorking():
					t.Fatalf("goal writes=%d, %s: ended after %d accepted writes, want %d", tc.goalWrites, phase, w-1, tc.need)
				default:
				}
				g.observe(history.Event{Source: history.SourceResource, Kind: history.KindDecision, Result: history.ResultAccepted})
			}
			select {
			case <-g.leaderWorking():
			default:
				t.Fatalf("goal writes=%d, %s: not ended after %d accepted writes", tc.goalWrites, phase, tc.need)
			}
		}
		// The faults phase counts nothing toward it: its goal is the tracker's.
		g.observe(history.Event{Source: history.SourceHarness, Kind: history.KindPhase, Phase: history.PhaseFaults})
		g.observe(history.Event{Source: history.SourceResource, Kind: history.KindDecision, Result: history.ResultAccepted})
		select {
		case <-g.leaderWorking():
			t.Fatalf("goal writes=%d: the faults phase's writes ended a leader wait", tc.goalWrites)
		default:
		}
	}
}
