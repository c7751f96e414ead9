// Package history is the run's record: one JSON event per line in history.jsonl, written by
// the harness as things happen and read back by checkers and reports. Every timestamp is
// nanoseconds of the host's CLOCK_MONOTONIC, which candidates, the resource and the harness
// share because containers share the kernel clock. docs/history.md is the public schema.
package history

import (
	"fmt"
	"sort"
)

// Version is the schema version written in every event's "v" field.
const Version = 1

// Source says who produced an event.
type Source string

const (
	SourceCandidate Source = "candidate" // a candidate process, through the candidate contract
	SourceResource  Source = "resource"  // the fenced resource's decision log
	SourceHarness   Source = "harness"   // run lifecycle, process starts/exits, contract checks
	SourceNemesis   Source = "nemesis"   // fault starts and ends
)

// Kind is what happened. Candidate kinds are the candidate contract's vocabulary.
type Kind string

const (
	// candidate
	KindCampaigning Kind = "campaigning"  // started trying to become leader
	KindElected     Kind = "elected"      // believes it leads; Token is its fencing token
	KindSteppedDown Kind = "stepped-down" // stopped believing it leads; Reason says why
	KindWrite       Kind = "write"        // a leader's write as the candidate saw it: CallT..T, Result
	KindError       Kind = "error"        // a recipe or store error the candidate wants on record
	// KindStep (optional): the recipe passed an internal step (Name), e.g. lock-acquired
	// between two store commands. Faults can trigger on it (nemesis on=step:NAME);
	// checkers ignore it.
	KindStep Kind = "step"

	// resource
	KindDecision   Kind = "decision"    // the resource accepted or rejected a write
	KindBadRequest Kind = "bad-request" // the resource refused a malformed request

	// harness
	KindRunStart          Kind = "run-start"
	KindPhase             Kind = "phase" // Phase names the lifecycle phase that starts now
	KindProcessStart      Kind = "process-start"
	KindProcessExit       Kind = "process-exit"
	KindSignal            Kind = "signal" // the harness sent Signal to Node (SIGTERM handoff, SIGKILL crash)
	KindContractViolation Kind = "contract-violation"
	KindRunEnd            Kind = "run-end"
	// KindNodeExit: a store node's, the resource's (or a removed candidate's) container
	// exited or disappeared outside teardown (Node, Reason); T is the engine's die/destroy
	// time (docker events timeNano, converted by FromWall).
	KindNodeExit Kind = "node-exit"
	// KindHarnessError: something the harness did failed and may cost the run its evidence
	// (a heal outside a fault window, teardown leftovers); Phase says when, Reason what.
	KindHarnessError Kind = "harness-error"

	// nemesis
	KindFaultStart Kind = "fault-start"
	KindFaultEnd   Kind = "fault-end"
	// KindFaultPlanned is one entry of the schedule as the fault phase begins: Spec, Fault,
	// Trigger (a triggered entry) and Count, the occurrences that must take effect (a
	// trigger that never fires leaves no fault-start, so only this says it was planned).
	KindFaultPlanned Kind = "fault-planned"

	// fence device (harness/fence.go, docs/candidates.md "The fence device"): one
	// fence-request when a request reaches the device, one fence-reply with the same
	// FenceID when it answers (or drops it). Node is the requester when the device could
	// tell who asked (the source address of a candidate of the run), Target the node to act
	// on, Action off|on|status. Added in schema 1 like step: readers of older builds refuse them.
	KindFenceRequest Kind = "fence-request"
	KindFenceReply   Kind = "fence-reply"
)

// Fence actions and reply results.
const (
	FenceOff    = "off"
	FenceOn     = "on"
	FenceStatus = "status"

	FenceDone         = "done"         // the action took effect (off: the process was confirmed dead) or the status was read
	FenceRefused      = "refused"      // not a node of this run or a bad request (a source outside the run's candidates is refused unrecorded)
	FenceFailed       = "failed"       // the device could not do it (Reason says why)
	FenceDropped      = "dropped"      // a fence-unreachable fault swallowed it, or the run ended while a fault held it: no answer was sent, nothing done
	FenceAcknowledged = "acknowledged" // a fence-lying fault answered "off" before the node was killed
)

var kindSource = map[Kind]Source{
	KindCampaigning: SourceCandidate, KindElected: SourceCandidate, KindSteppedDown: SourceCandidate,
	KindWrite: SourceCandidate, KindError: SourceCandidate, KindStep: SourceCandidate,
	KindDecision: SourceResource, KindBadRequest: SourceResource,
	KindRunStart: SourceHarness, KindPhase: SourceHarness, KindProcessStart: SourceHarness,
	KindProcessExit: SourceHarness, KindSignal: SourceHarness, KindContractViolation: SourceHarness,
	KindRunEnd: SourceHarness, KindNodeExit: SourceHarness, KindHarnessError: SourceHarness,
	KindFaultStart: SourceNemesis, KindFaultEnd: SourceNemesis, KindFaultPlanned: SourceNemesis,
	KindFenceRequest: SourceHarness, KindFenceReply: SourceHarness,
}

// Kinds lists every known kind, sorted, for error messages and docs.
func Kinds() []string {
	out := make([]string, 0, len(kindSource))
	for k := range kindSource {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

// Write results, as the candidate saw them (KindWrite) and as the resource decided (KindDecision).
const (
	ResultAccepted = "accepted"
	ResultRejected = "rejected"
	ResultUnknown  = "unknown" // the candidate got no answer: the write may or may not have landed
)

// Lifecycle phases, in order.
const (
	PhaseSetup    = "setup"
	PhaseWarmup   = "warmup"
	PhaseFaults   = "faults"
	PhaseHeal     = "heal"
	PhaseRecovery = "recovery"
	PhaseTeardown = "teardown"
)

// Event is one line of history.jsonl. It is deliberately flat: checkers scan millions of
// these, and every field is meaningful for only some kinds (documented per field).
type Event struct {
	V      int    `json:"v"`
	Seq    int64  `json:"seq"` // arrival order in this file, from 1; assigned by Writer
	T      int64  `json:"t"`   // CLOCK_MONOTONIC ns when it happened (return time for writes)
	Source Source `json:"src"`
	Kind   Kind   `json:"kind"`
	Node   string `json:"node,omitempty"` // candidate or store node the event is about

	// Stamped is true when the producer gave no timestamp and the harness stamped the
	// event on receipt (later than it happened by the log pipeline's latency).
	Stamped bool `json:"stamped,omitempty"`

	Token   int64  `json:"token,omitempty"`    // elected, write, decision: fencing token (>= 1)
	WriteID string `json:"write_id,omitempty"` // write, decision: unique per write
	CallT   int64  `json:"call_t,omitempty"`   // write: when the candidate sent it; elected: when the winning acquire was sent (optional)
	Result  string `json:"result,omitempty"`   // write: accepted|rejected|unknown; decision: accepted|rejected
	Max     int64  `json:"max,omitempty"`      // decision: highest accepted token before this decision
	Stale   bool   `json:"stale,omitempty"`    // decision: token < max (accepted only in unfenced mode)
	Mode    string `json:"mode,omitempty"`     // decision: fenced|unfenced

	Reason string `json:"reason,omitempty"` // stepped-down, contract-violation, bad-request, error, run-end, node-exit, harness-error, fault-end (what happened to the fault while it held)
	Phase  string `json:"phase,omitempty"`  // phase; harness-error: the phase it happened in
	Signal string `json:"signal,omitempty"` // signal: SIGTERM, SIGKILL, ...
	Exit   *int   `json:"exit,omitempty"`   // process-exit: exit code when known
	Line   string `json:"line,omitempty"`   // contract-violation: the offending output, truncated
	Name   string `json:"name,omitempty"`   // step: the recipe's name for the step (lock-acquired, token-drawn, ...)

	FaultID int      `json:"fault_id,omitempty"` // fault-start/fault-end pair
	Fault   string   `json:"fault,omitempty"`    // fault kind: pause, kill, partition, clock, loss, ...
	Targets []string `json:"targets,omitempty"`  // resolved targets
	Spec    string   `json:"spec,omitempty"`     // fault-start: the spec it came from; run-start: the run's summary
	Err     string   `json:"error,omitempty"`    // fault-start/end: the fault did not apply / heal

	// fault-start of a fault triggered by an event (nemesis on=EVENT): which event fired it.
	Trigger      string   `json:"trigger,omitempty"`       // the trigger as written: elected, write:3, step:lock-acquired, fault-end, ...
	TriggerNodes []string `json:"trigger_nodes,omitempty"` // the node whose event fired it (fault-end: the healed fault's targets)
	TriggerSeq   int64    `json:"trigger_seq,omitempty"`   // seq of the triggering event
	TriggerT     int64    `json:"trigger_t,omitempty"`     // t of the triggering event (fault-start t - trigger_t = after + reaction time)

	Count int `json:"count,omitempty"` // fault-planned: occurrences of the entry that must take effect

	// fence-request / fence-reply (Node: the requester, "" when unknown).
	FenceID int    `json:"fence_id,omitempty"` // pairs a request with its reply, from 1
	Action  string `json:"action,omitempty"`   // off | on | status
	Target  string `json:"target,omitempty"`   // the node the request names (as sent, cut to 64 bytes)
	Power   string `json:"power,omitempty"`    // fence-reply: the power state answered: on | off
}

// Validate checks one event for the invariants every reader relies on.
func (e *Event) Validate() error {
	if e.V != Version {
		return fmt.Errorf("schema version %d, this splitbrain reads version %d", e.V, Version)
	}
	want, ok := kindSource[e.Kind]
	if !ok {
		return fmt.Errorf("unknown kind %q (known: %v)", e.Kind, Kinds())
	}
	if e.Source != want {
		return fmt.Errorf("kind %q must come from source %q, not %q", e.Kind, want, e.Source)
	}
	if e.T <= 0 {
		return fmt.Errorf("kind %q has no timestamp \"t\" (CLOCK_MONOTONIC ns, > 0)", e.Kind)
	}
	switch e.Kind {
	case KindCampaigning, KindElected, KindSteppedDown, KindWrite, KindError, KindStep,
		KindProcessStart, KindProcessExit, KindSignal, KindContractViolation, KindNodeExit:
		if e.Node == "" {
			return fmt.Errorf("kind %q needs a \"node\"", e.Kind)
		}
	}
	switch e.Kind {
	case KindWrite:
		if e.WriteID == "" {
			return fmt.Errorf("write needs a \"write_id\"")
		}
		if e.Result != ResultAccepted && e.Result != ResultRejected && e.Result != ResultUnknown {
			return fmt.Errorf("write result %q: want accepted, rejected or unknown", e.Result)
		}
		if e.CallT <= 0 || e.CallT > e.T {
			return fmt.Errorf("write call_t %d must be > 0 and <= t %d", e.CallT, e.T)
		}
	case KindElected:
		if e.CallT < 0 || e.CallT > e.T {
			return fmt.Errorf("elected call_t %d must be >= 0 and <= t %d (when the winning acquire was sent)", e.CallT, e.T)
		}
	case KindStep:
		if e.Name == "" {
			return fmt.Errorf("step needs a \"name\"")
		}
	case KindHarnessError:
		if e.Reason == "" {
			return fmt.Errorf("harness-error needs a \"reason\"")
		}
	case KindDecision:
		if e.Result != ResultAccepted && e.Result != ResultRejected {
			return fmt.Errorf("decision result %q: want accepted or rejected", e.Result)
		}
	case KindPhase:
		if e.Phase == "" {
			return fmt.Errorf("phase event needs a \"phase\"")
		}
	case KindFaultPlanned:
		if e.Spec == "" || e.Count < 1 {
			return fmt.Errorf("fault-planned needs a \"spec\" and a \"count\" >= 1")
		}
	case KindFenceRequest, KindFenceReply:
		if e.FenceID <= 0 {
			return fmt.Errorf("%s needs a \"fence_id\" > 0", e.Kind)
		}
		if e.Action == "" {
			return fmt.Errorf("%s needs an \"action\"", e.Kind)
		}
		if e.Kind == KindFenceReply {
			switch e.Result {
			case FenceDone, FenceRefused, FenceFailed, FenceDropped, FenceAcknowledged:
			default:
				return fmt.Errorf("fence-reply result %q: want done, refused, failed, dropped or acknowledged", e.Result)
			}
		}
	case KindFaultStart, KindFaultEnd:
		if e.FaultID <= 0 {
			return fmt.Errorf("%s needs a \"fault_id\" > 0", e.Kind)
		}
	}
	return nil
}

// SourceOf is the source every event of kind k must carry ("" for an unknown kind).
func SourceOf(k Kind) Source { return kindSource[k] }
