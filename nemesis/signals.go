package nemesis

import (
	"context"
	"sync"
)

// signals is the mechanism of process signals: the processes it SIGSTOPped, by the fault
// that stopped them, and how many active faults hold each one, so overlapping pauses of one
// process resume it only when the last of them heals.
type signals struct {
	*live
	mu      sync.Mutex
	stopped map[string][]proc // by fault key
	holds   map[proc]int
	// turn serializes a pause's stop-and-hold with a heal's drop-and-continue: a heal that
	// found a process unheld and sent its SIGCONT after the next pause had stopped and held
	// it left that pause in effect on paper only (under load the heal of one occurrence of
	// a repeating pause ran into the next: "not in state T after 20s: 19002=S", 2026-11-29).
	turn sync.Mutex
}

// stopAndHold stops the processes sel names under root and holds them for the fault with key.
func (s *signals) stopAndHold(key string, root int, sel string) ([]proc, error) {
	s.turn.Lock()
	defer s.turn.Unlock()
	procs, err := stopSelected(root, sel)
	s.hold(key, procs)
	return procs, err
}

func newSignals(l *live) *signals { return &signals{live: l} }

// hold records procs as stopped by the fault with key.
func (s *signals) hold(key string, procs []proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped == nil {
		s.stopped, s.holds = map[string][]proc{}, map[proc]int{}
	}
	s.stopped[key] = append(s.stopped[key], procs...)
	for _, p := range procs {
		s.holds[p]++
	}
}

// release drops the fault's hold and continues the processes no other fault holds. It
// returns when the pause ended for them, the moment before the first SIGCONT (0 when none was
// sent: another fault still holds them).
func (s *signals) release(key string) (int64, error) {
	s.turn.Lock()
	defer s.turn.Unlock()
	s.mu.Lock()
	var resume []proc
	for _, p := range s.stopped[key] {
		if s.holds[p]--; s.holds[p] <= 0 {
			delete(s.holds, p)
			resume = append(resume, p)
		}
	}
	delete(s.stopped, key)
	s.mu.Unlock()
	return continueProcs(resume)
}

// sweep continues every process still stopped.
func (s *signals) sweep(context.Context) []error {
	s.turn.Lock()
	defer s.turn.Unlock()
	s.mu.Lock()
	stopped := s.stopped
	s.stopped, s.holds = nil, nil
	s.mu.Unlock()
	var errs []error
	for _, procs := range stopped {
		if _, err := continueProcs(procs); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
