// Package resource is the fenced resource: the shared thing leaders write to. It is the
// ground truth for effects: every decision is printed as one history event line, in the
// order the decisions were taken.
//
// API (docs/candidates.md): POST /write {"node":..,"token":..,"write_id":..} answers 200
// accepted, 409 rejected (stale token) or 4xx for a bad request; GET /healthz; GET /state.
package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// Mode selects whether stale writes are refused.
type Mode string

const (
	// Fenced accepts a write iff its token >= the highest token accepted so far.
	Fenced Mode = "fenced"
	// Unfenced accepts every write but marks the ones fencing would have refused stale:
	// a system without fencing.
	Unfenced Mode = "unfenced"
)

// ParseMode turns a flag value into a Mode.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case Fenced, Unfenced:
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown resource mode %q: want fenced or unfenced", s)
}

// Limits that keep bad clients from costing memory.
const (
	maxBody  = 4 << 10
	maxIDLen = 256
)

// WriteRequest is the body of POST /write.
type WriteRequest struct {
	Node    string `json:"node"`
	Token   int64  `json:"token"`
	WriteID string `json:"write_id"`
}

// WriteResponse is the body of every /write answer.
type WriteResponse struct {
	Result string `json:"result,omitempty"` // accepted | rejected
	Max    int64  `json:"max"`              // highest accepted token after this decision
	Stale  bool   `json:"stale,omitempty"`  // token was below the previous max
	Error  string `json:"error,omitempty"`  // bad request: what is wrong
}

// State is the body of GET /state.
type State struct {
	Mode          Mode  `json:"mode"`
	Max           int64 `json:"max"`
	Accepted      int64 `json:"accepted"`
	Rejected      int64 `json:"rejected"`
	StaleAccepted int64 `json:"stale_accepted"`
	BadRequests   int64 `json:"bad_requests"`
}

// Server decides writes. Decisions and their log lines happen under one lock, so the log
// order is the decision order.
type Server struct {
	mode Mode
	now  func() int64

	mu    sync.Mutex
	out   io.Writer
	state State
	seen  map[string]struct{} // write ids already decided
	line  bytes.Buffer
	enc   *json.Encoder
	err   error // first log write error
}

// New returns a server in mode that logs to out (the harness collects it into the history).
func New(mode Mode, out io.Writer) *Server {
	s := &Server{mode: mode, now: history.Now, out: out, seen: map[string]struct{}{}}
	s.state.Mode = mode
	s.enc = json.NewEncoder(&s.line)
	return s
}

// Handler serves the resource API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/write", s.handleWrite)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/state", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.State())
	})
	return mux
}

// State returns the counters.
func (s *Server) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// LogErr reports the first failure to write the decision log (the harness would lose ground truth).
func (s *Server) LogErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Server) handleWrite(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.badRequest(w, http.StatusMethodNotAllowed, WriteRequest{}, "method "+r.Method+" not allowed: POST /write")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		s.badRequest(w, http.StatusBadRequest, WriteRequest{}, "reading body: "+err.Error())
		return
	}
	if len(body) > maxBody {
		s.badRequest(w, http.StatusRequestEntityTooLarge, WriteRequest{}, fmt.Sprintf("body larger than %d bytes", maxBody))
		return
	}
	req, err := parseWrite(body)
	if err != nil {
		s.badRequest(w, http.StatusBadRequest, req, err.Error())
		return
	}
	code, resp := s.Decide(req)
	writeJSON(w, code, resp)
}

func parseWrite(body []byte) (WriteRequest, error) {
	var raw struct {
		Node    *string         `json:"node"`
		Token   json.RawMessage `json:"token"`
		WriteID *string         `json:"write_id"`
	}
	var req WriteRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return req, fmt.Errorf(`body must be JSON {"node":string,"token":integer>=1,"write_id":string}: %v`, err)
	}
	if dec.More() {
		return req, errors.New("body holds more than one JSON value")
	}
	if raw.Node != nil {
		req.Node = *raw.Node
	}
	if raw.WriteID != nil {
		req.WriteID = *raw.WriteID
	}
	if raw.Token != nil {
		// ParseInt refuses quoted, fractional and exponent forms: tokens are JSON integers.
		t, err := strconv.ParseInt(string(raw.Token), 10, 64)
		if err != nil {
			return req, fmt.Errorf("token %.40s is not a 64-bit JSON integer", raw.Token)
		}
		req.Token = t
	}
	switch {
	case raw.Node == nil || req.Node == "":
		return req, errors.New(`missing "node"`)
	case raw.Token == nil:
		return req, errors.New(`missing "token"`)
	case req.Token < 1:
		return req, fmt.Errorf("token %d: fencing tokens are integers >= 1", req.Token)
	case raw.WriteID == nil || req.WriteID == "":
		return req, errors.New(`missing "write_id"`)
	case len(req.Node) > maxIDLen || len(req.WriteID) > maxIDLen:
		return req, fmt.Errorf("node and write_id must be at most %d bytes", maxIDLen)
	case !validNodeID(req.Node):
		// Not echoed into the event's node field: reports and visualizations show that field.
		bad := req.Node
		req.Node = ""
		return req, fmt.Errorf("node %.40q is not a node id: use letters, digits, '-', '_' or '.' (the contract's SPLITBRAIN_NODE_ID, e.g. c1)", bad)
	}
	return req, nil
}

// validNodeID is the contract's id charset: letters, digits, '-', '_', '.'.
func validNodeID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return s != ""
}

// Decide takes the decision for a well-formed write, logs it and returns the HTTP answer.
func (s *Server) Decide(req WriteRequest) (int, WriteResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.seen[req.WriteID]; dup {
		s.logBadLocked(req, "duplicate write_id "+strconv.Quote(req.WriteID)+": every write needs a new id")
		return http.StatusConflict, WriteResponse{Max: s.state.Max, Error: "duplicate write_id"}
	}
	s.seen[req.WriteID] = struct{}{}
	before := s.state.Max
	stale := req.Token < before
	accepted := !stale || s.mode == Unfenced
	if accepted {
		s.state.Accepted++
		if stale {
			s.state.StaleAccepted++
		} else {
			s.state.Max = req.Token
		}
	} else {
		s.state.Rejected++
	}
	result := history.ResultRejected
	if accepted {
		result = history.ResultAccepted
	}
	s.logLocked(history.Event{Kind: history.KindDecision, Node: req.Node, Token: req.Token,
		WriteID: req.WriteID, Result: result, Max: before, Stale: stale, Mode: string(s.mode)})
	resp := WriteResponse{Result: result, Max: s.state.Max, Stale: stale}
	if !accepted {
		return http.StatusConflict, resp
	}
	return http.StatusOK, resp
}

func (s *Server) badRequest(w http.ResponseWriter, code int, req WriteRequest, reason string) {
	s.mu.Lock()
	s.logBadLocked(req, reason)
	max := s.state.Max
	s.mu.Unlock()
	writeJSON(w, code, WriteResponse{Max: max, Error: reason})
}

func (s *Server) logBadLocked(req WriteRequest, reason string) {
	s.state.BadRequests++
	if req.Token < 0 {
		req.Token = 0 // history tokens are >= 1 or absent
	}
	s.logLocked(history.Event{Kind: history.KindBadRequest, Node: req.Node, Token: req.Token,
		WriteID: req.WriteID, Reason: reason, Mode: string(s.mode)})
}

// logLocked stamps e with the decision time and writes it as one line; s.mu is held.
func (s *Server) logLocked(e history.Event) {
	e.V, e.Source, e.T = history.Version, history.SourceResource, s.now()
	s.line.Reset()
	if err := s.enc.Encode(&e); err != nil { // Encode appends the newline
		return
	}
	if _, err := s.out.Write(s.line.Bytes()); err != nil && s.err == nil {
		s.err = err
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// ParseLine turns one stdout line of the resource into its decision or bad-request event
// (Seq unset), for the harness that collects the log into history.jsonl. Lines not starting
// with '{' are log output (contract.ErrNotEvent); anything else that is not a valid resource
// event is an error naming what is wrong. This is the only parser of the format.
func ParseLine(line []byte) (history.Event, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return history.Event{}, contract.ErrNotEvent
	}
	if len(line) > contract.MaxLineBytes {
		return history.Event{}, fmt.Errorf("resource line of %d bytes exceeds %d", len(line), contract.MaxLineBytes)
	}
	var e history.Event
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return history.Event{}, fmt.Errorf("resource output is not a history event: %v", err)
	}
	if dec.More() {
		return history.Event{}, errors.New("resource output has trailing data after the JSON object")
	}
	if e.Kind != history.KindDecision && e.Kind != history.KindBadRequest {
		return history.Event{}, fmt.Errorf("resource printed kind %q: want %q or %q", e.Kind, history.KindDecision, history.KindBadRequest)
	}
	// The writer owns version and sequence; the source is known from who printed the line.
	e.V, e.Seq, e.Source = history.Version, 0, history.SourceResource
	if err := e.Validate(); err != nil {
		return history.Event{}, err
	}
	return e, nil
}
