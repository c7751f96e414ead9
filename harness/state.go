package harness

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// LiveState is what the run knows right now, derived from the events as they are recorded:
// who believes it leads (with its token), which candidates run, which faults are active, and
// running counts. The nemesis targets "leader"/"follower" from it; the progress line shows it.
type LiveState struct {
	mu         sync.Mutex
	phase      string
	leaders    map[string]int64 // node → token of its current tenure
	lastLeader string           // most recently elected node still believing it leads
	running    map[string]bool  // candidate → process running
	faults     map[int]string   // fault id → "kind@targets"
	clockAware map[string]bool  // candidates that declared they honour the clock-offset file
	campaigned map[string]bool  // candidates that printed campaigning at least once
	counts     Counts
	writes     leaderWrites // accepted writes per tenure (leaderwrites.go)
}

// Counts are the run's running totals.
type Counts struct {
	Events             int64 `json:"events"`
	Elections          int64 `json:"elections"`
	StepDowns          int64 `json:"step_downs"`
	Writes             int64 `json:"writes"`               // write events of the candidates (what they saw)
	WritesAccepted     int64 `json:"writes_accepted"`      // resource decisions
	WritesRejected     int64 `json:"writes_rejected"`      // resource decisions
	StaleAccepted      int64 `json:"stale_accepted"`       // resource decisions with stale=true, accepted
	ContractViolations int64 `json:"contract_violations"`  // malformed candidate/resource output
	ProcessExits       int64 `json:"process_exits"`        // candidate process exits seen
	FaultsStarted      int64 `json:"faults_started"`       // fault-start events
	FaultsFailed       int64 `json:"faults_failed"`        // fault-start/end with an error
	MaxConcurrentLeads int64 `json:"max_concurrent_leads"` // most candidates believing they lead at once
}

// NewLiveState starts with no leaders and the given candidates not running.
func NewLiveState() *LiveState {
	return &LiveState{leaders: map[string]int64{}, running: map[string]bool{}, faults: map[int]string{}, clockAware: map[string]bool{}, campaigned: map[string]bool{}}
}

// Observe updates the state with one recorded event.
func (s *LiveState) Observe(e history.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.Events++
	s.writes.observe(e)
	switch e.Kind {
	case history.KindPhase:
		s.phase = e.Phase
	case history.KindCampaigning:
		s.campaigned[e.Node] = true
	case history.KindElected:
		s.counts.Elections++
		s.leaders[e.Node] = e.Token
		s.lastLeader = e.Node
		if n := int64(len(s.leaders)); n > s.counts.MaxConcurrentLeads {
			s.counts.MaxConcurrentLeads = n
		}
	case history.KindSteppedDown:
		s.counts.StepDowns++
		s.dropLeader(e.Node)
	case history.KindWrite:
		s.counts.Writes++
	case history.KindDecision:
		if e.Result == history.ResultAccepted {
			s.counts.WritesAccepted++
			if e.Stale {
				s.counts.StaleAccepted++
			}
		} else {
			s.counts.WritesRejected++
		}
	case history.KindContractViolation:
		s.counts.ContractViolations++
	case history.KindProcessStart:
		s.running[e.Node] = true
	case history.KindProcessExit:
		s.counts.ProcessExits++
		s.running[e.Node] = false
		s.dropLeader(e.Node) // a dead process believes nothing
	case history.KindFaultStart:
		s.counts.FaultsStarted++
		if e.Err != "" {
			s.counts.FaultsFailed++
			return
		}
		s.faults[e.FaultID] = e.Fault + "@" + strings.Join(e.Targets, ",")
	case history.KindFaultEnd:
		if e.Err != "" {
			s.counts.FaultsFailed++
		}
		delete(s.faults, e.FaultID)
	}
}

// markCampaigned records that node printed a campaigning line, valid or not (Recorder).
func (s *LiveState) markCampaigned(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.campaigned[node] = true
}

// Campaigned reports whether every one of nodes has printed campaigning at least once.
func (s *LiveState) Campaigned(nodes []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range nodes {
		if !s.campaigned[n] {
			return false
		}
	}
	return true
}

func (s *LiveState) dropLeader(node string) {
	delete(s.leaders, node)
	if s.lastLeader == node {
		s.lastLeader = ""
		// Fall back to the remaining believer with the highest token, if any.
		var best int64
		for n, t := range s.leaders {
			if t > best || (t == best && n < s.lastLeader) {
				best, s.lastLeader = t, n
			}
		}
	}
}

// Leader is the candidate that most recently became leader and still believes it leads.
func (s *LiveState) Leader() (node string, token int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastLeader == "" {
		return "", 0, false
	}
	return s.lastLeader, s.leaders[s.lastLeader], true
}

// Leaders lists every candidate that believes it leads, sorted by name.
func (s *LiveState) Leaders() []Tenure {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Tenure, 0, len(s.leaders))
	for n, t := range s.leaders {
		out = append(out, Tenure{Node: n, Token: t})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// Running reports whether the candidate's process is running as far as the run knows.
func (s *LiveState) Running(node string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[node]
}

// Tenure is a believed leadership: who and with which fencing token.
type Tenure struct {
	Node  string `json:"node"`
	Token int64  `json:"token"`
}

// Snapshot is a consistent copy of the state for display.
type Snapshot struct {
	Phase        string
	Leaders      []Tenure
	ActiveFaults []string
	Counts       Counts
}

// Snapshot copies the state.
func (s *LiveState) Snapshot() Snapshot {
	leaders := s.Leaders()
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{Phase: s.phase, Leaders: leaders, Counts: s.counts}
	ids := make([]int, 0, len(s.faults))
	for id := range s.faults {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		snap.ActiveFaults = append(snap.ActiveFaults, fmt.Sprintf("#%d %s", id, s.faults[id]))
	}
	return snap
}

func (s *LiveState) markClockAware(node string) {
	s.mu.Lock()
	s.clockAware[node] = true
	s.mu.Unlock()
}

// ClockAware reports whether the candidate declared that it honours the clock-offset file.
func (s *LiveState) ClockAware(node string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clockAware[node]
}
