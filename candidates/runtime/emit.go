package runtime

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// line is one event as the contract prints it (a subset of history.Event).
type line struct {
	T       int64  `json:"t"`
	Kind    string `json:"kind"`
	Token   int64  `json:"token,omitempty"`
	WriteID string `json:"write_id,omitempty"`
	CallT   int64  `json:"call_t,omitempty"`
	Result  string `json:"result,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Clock   string `json:"clock,omitempty"`
	Name    string `json:"name,omitempty"`
}

// Emitter prints contract events, one whole line per write, serialized so concurrent
// goroutines never interleave and the output order is the event order.
type Emitter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	now func() int64
}

// NewEmitter prints to w (stdout in a candidate).
func NewEmitter(w io.Writer) *Emitter { return &Emitter{w: w, now: history.Now} }

func (e *Emitter) emit(l line) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l.T == 0 {
		// Stamped under the lock so timestamps never go back in output order.
		l.T = e.now()
	}
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	e.buf = append(append(e.buf[:0], b...), '\n')
	e.w.Write(e.buf)
}

// Campaigning says the candidate started trying to lead; clockAware declares that it
// honours the clock-offset file.
func (e *Emitter) Campaigning(clockAware bool) {
	l := line{Kind: string(history.KindCampaigning)}
	if clockAware {
		l.Clock = "offset-file"
	}
	e.emit(l)
}

// Elected says the candidate believes it leads with token, granted by an acquire sent at
// callT (0: unknown, omitted).
func (e *Emitter) Elected(token, callT int64) {
	e.emit(line{Kind: string(history.KindElected), Token: token, CallT: callT})
}

// SteppedDown says the candidate stopped believing it leads.
func (e *Emitter) SteppedDown(reason string) {
	e.emit(line{Kind: string(history.KindSteppedDown), Reason: nonEmpty(reason)})
}

// Error records a recipe or store error.
func (e *Emitter) Error(reason string) {
	e.emit(line{Kind: string(history.KindError), Reason: nonEmpty(reason)})
}

// Write records one leader write sent at callT; t is stamped now, when the answer is in (or
// given up), under the output lock so a node's timestamps never go back in output order.
func (e *Emitter) Write(token int64, writeID string, callT int64, result string) {
	e.emit(line{Kind: string(history.KindWrite), Token: token, WriteID: writeID, CallT: callT, Result: result})
}

// Step records that the recipe passed an internal step (optional contract event): faults
// can be triggered on it (nemesis on=step:NAME), checkers ignore it.
func (e *Emitter) Step(name string) {
	e.emit(line{Kind: string(history.KindStep), Name: name})
}

func nonEmpty(s string) string {
	if s == "" {
		return "unspecified"
	}
	if len(s) > 1024 {
		return s[:1024]
	}
	return s
}
