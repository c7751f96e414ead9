package harness

import (
	"context"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// leaderWrites counts each believer's accepted writes since its election (as it reported
// them) and wakes whoever waits for a count; LiveState.Observe feeds it under the state's
// lock. The handoff workload paces its SIGTERMs on it.
type leaderWrites struct {
	accepted map[string]int
	wake     chan struct{} // closed on the next change; nil while nobody waits
}

func (w *leaderWrites) observe(e history.Event) {
	switch e.Kind {
	case history.KindElected:
		if w.accepted == nil {
			w.accepted = map[string]int{}
		}
		w.accepted[e.Node] = 0
	case history.KindWrite:
		if e.Result != history.ResultAccepted || w.accepted == nil {
			return
		}
		if _, leads := w.accepted[e.Node]; !leads {
			return
		}
		w.accepted[e.Node]++
	case history.KindSteppedDown, history.KindProcessExit:
		delete(w.accepted, e.Node)
	default:
		return
	}
	if w.wake != nil {
		close(w.wake)
		w.wake = nil
	}
}

// WaitLeaderWrites waits until the leader (Leader) has had n writes accepted since its
// election and returns it, or returns ctx's error.
func (s *LiveState) WaitLeaderWrites(ctx context.Context, n int) (string, int64, error) {
	for {
		s.mu.Lock()
		if l := s.lastLeader; l != "" && s.writes.accepted[l] >= n {
			token := s.leaders[l]
			s.mu.Unlock()
			return l, token, nil
		}
		if s.writes.wake == nil {
			s.writes.wake = make(chan struct{})
		}
		wake := s.writes.wake
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return "", 0, ctx.Err()
		case <-wake:
		}
	}
}

func (w workloadEnv) WaitLeaderWrites(ctx context.Context, n int) (string, int64, error) {
	return w.state.WaitLeaderWrites(ctx, n)
}
