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

// release drops the fault's hold and continues the processes no other fault holds.
func (s *signals) release(key string) error {
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
	s.mu.Lock()
	stopped := s.stopped
	s.stopped, s.holds = nil, nil
	s.mu.Unlock()
	var errs []error
	for _, procs := range stopped {
		if err := continueProcs(procs); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
