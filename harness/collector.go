package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/workloads/resource"
)

// maxViolationLine bounds how much of an offending line a contract-violation event keeps.
const maxViolationLine = 512

// Recorder is the run's single path into history.jsonl: it appends events and feeds the live
// state. Candidate and resource output lines enter through CandidateLine and ResourceLine.
// After Close every call is a no-op, so late output from stopping containers cannot fail the
// run.
type Recorder struct {
	w     *history.Writer
	state *LiveState
	// beforeEvent, when set, runs before a candidate's event line is recorded (the run uses
	// it to record a restart it has not seen yet ahead of the restarted process's events).
	beforeEvent func(node string)

	observer atomic.Pointer[func(history.Event)] // sees every recorded event (the nemesis's triggers)

	mu      sync.Mutex
	closed  bool
	dropped int64 // events refused by the writer (invalid after parsing, or written after close)
	lastErr error
}

// NewRecorder records into w and keeps state up to date.
func NewRecorder(w *history.Writer, state *LiveState) *Recorder {
	return &Recorder{w: w, state: state}
}

// Record appends e (stamping it with the current time when it has none) and updates the
// live state. It returns the event as written.
func (r *Recorder) Record(e history.Event) (history.Event, error) {
	r.mu.Lock()
	if r.closed {
		r.dropped++
		r.mu.Unlock()
		return e, fmt.Errorf("%w (%s %s)", errRecorderClosed, e.Source, e.Kind)
	}
	r.mu.Unlock()
	written, err := r.w.Append(e)
	if err != nil {
		r.mu.Lock()
		r.dropped++
		r.lastErr = err
		r.mu.Unlock()
		return written, err
	}
	r.state.Observe(written)
	if f := r.observer.Load(); f != nil {
		(*f)(written)
	}
	return written, nil
}

// SetObserver makes f see every event after it is written (f must not block).
func (r *Recorder) SetObserver(f func(history.Event)) { r.observer.Store(&f) }

// CandidateLine records one stdout line of candidate node. A line that is a contract event
// becomes that event; a line that looks like an event but is not valid becomes a
// contract-violation event carrying the (truncated) line; other output is log only (the
// platform already wrote it to logs/<node>.log).
func (r *Recorder) CandidateLine(node string, line []byte) {
	defer r.survive(node, line)
	p, err := contract.ParseLine(node, line, history.Now())
	if errors.Is(err, contract.ErrNotEvent) {
		return
	}
	if err == nil {
		if r.beforeEvent != nil {
			r.beforeEvent(node)
		}
		if p.ClockAware {
			r.state.markClockAware(node)
		}
		if _, err = r.Record(p.Event); err == nil {
			return
		}
	}
	r.violation(node, line, err)
	if lineKind(line) == string(history.KindCampaigning) {
		// A campaigning line the contract rejects still shows the candidate's runtime is up:
		// the warmup's wait for every candidate to campaign is over for it (it waited out its
		// whole 3-minute bound for two such candidates, in every `candidate check` of one).
		r.state.markCampaigned(node)
	}
}

// lineKind is the "kind" of a JSON line, "" when it has none.
func lineKind(line []byte) string {
	var k struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(line, &k) != nil {
		return ""
	}
	return k.Kind
}

// ResourceLine records one stdout line of the resource (its decision log).
func (r *Recorder) ResourceLine(node string, line []byte) {
	defer r.survive(node, line)
	e, err := resource.ParseLine(line)
	if errors.Is(err, contract.ErrNotEvent) {
		return
	}
	if err == nil {
		e.Source = history.SourceResource
		if _, err = r.Record(e); err == nil {
			return
		}
	}
	r.violation(node, line, err)
}

// survive turns a panic while handling one output line into a contract violation: a
// candidate's output must never bring the harness down.
func (r *Recorder) survive(node string, line []byte) {
	if p := recover(); p != nil {
		r.violation(node, line, fmt.Errorf("harness failed to parse this line (panic: %v)", p))
	}
}

// errRecorderClosed marks late output after the run's end: dropped, not a violation.
var errRecorderClosed = errors.New("history already closed")

func (r *Recorder) violation(node string, line []byte, cause error) {
	if errors.Is(cause, errRecorderClosed) {
		return
	}
	r.Record(history.Event{
		Source: history.SourceHarness,
		Kind:   history.KindContractViolation,
		Node:   node,
		Reason: cause.Error(),
		Line:   truncateLine(line, maxViolationLine),
	})
}

// Close makes later calls no-ops. The writer itself is closed by its owner.
func (r *Recorder) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// Dropped is how many events could not be written, and the last reason.
func (r *Recorder) Dropped() (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped, r.lastErr
}

// truncateLine keeps at most max bytes of valid UTF-8 (invalid bytes become U+FFFD so the
// JSON stays readable), marking a cut with "…".
func truncateLine(line []byte, max int) string {
	line = bytes.TrimRight(line, "\r\n")
	cut := len(line) > max
	if cut {
		// Back up to a rune boundary so the cut does not leave half a character.
		n := max
		for n > 0 && n > max-utf8.UTFMax && !utf8.RuneStart(line[n]) {
			n--
		}
		line = line[:n]
	}
	s := string(bytes.ToValidUTF8(line, []byte("\uFFFD")))
	if cut {
		s += "…"
	}
	return s
}
