package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// MaxLineBytes is the longest event line a candidate may print.
const MaxLineBytes = 64 << 10

// Limits on free-text fields keep one chatty candidate from bloating the history.
const (
	maxWriteID = 256
	maxReason  = 2048
	maxStep    = 64
)

// ErrNotEvent means the line is ordinary log output (it does not start with '{'): the harness
// keeps it as log, it is not a contract violation.
var ErrNotEvent = errors.New("not an event line (log output)")

// Violation is a line that looks like an event but breaks the contract. Reason says what is
// wrong in words a candidate author can act on.
type Violation struct{ Reason string }

func (v *Violation) Error() string { return "contract violation: " + v.Reason }

// Parsed is one event line turned into a history event.
type Parsed struct {
	Event history.Event // Source, Node, T (or Stamped) set; Seq and V are the writer's business
	// ClockAware is set when the line declared "clock":"offset-file" (campaigning only).
	ClockAware bool
}

func violation(format string, args ...any) error {
	return &Violation{Reason: fmt.Sprintf(format, args...)}
}

// fields allowed per kind besides t, kind and node; true = required.
var kindFields = map[history.Kind]map[string]bool{
	history.KindCampaigning: {"clock": false},
	history.KindElected:     {"token": true, "call_t": false}, // call_t: when the winning acquire was sent
	history.KindSteppedDown: {"reason": true},
	history.KindWrite:       {"token": true, "write_id": true, "call_t": true, "result": true},
	history.KindError:       {"reason": true},
	history.KindStep:        {"name": true}, // optional kind: an internal step of the recipe
}

// ParseLine turns one stdout line of candidate node into a history event. receivedAt is the
// harness's CLOCK_MONOTONIC reading when the line arrived: it stamps lines without "t", and a
// "t" later than it proves the candidate used another clock. It returns ErrNotEvent for log
// lines and a *Violation for malformed event lines; it never panics.
func ParseLine(node string, line []byte, receivedAt int64) (Parsed, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Parsed{}, ErrNotEvent
	}
	if len(line) > MaxLineBytes {
		return Parsed{}, violation("event line of %d bytes exceeds the %d-byte limit", len(line), MaxLineBytes)
	}
	raw, err := scanObject(line)
	if err != nil {
		return Parsed{}, err
	}

	kindRaw, ok := raw["kind"]
	if !ok {
		return Parsed{}, violation(`missing "kind" (one of campaigning, elected, stepped-down, write, error, step)`)
	}
	kindStr, ok := kindRaw.(string)
	if !ok {
		return Parsed{}, violation(`"kind" must be a string`)
	}
	kind := history.Kind(kindStr)
	allowed, ok := kindFields[kind]
	if !ok {
		return Parsed{}, violation("unknown kind %q (want campaigning, elected, stepped-down, write, error or step)", kindStr)
	}
	for name := range raw {
		switch name {
		case "t", "kind", "node":
			continue
		}
		if _, ok := allowed[name]; !ok {
			return Parsed{}, violation("field %q does not belong to a %s event", name, kind)
		}
	}
	for name, req := range allowed {
		if _, ok := raw[name]; req && !ok {
			return Parsed{}, violation("%s event needs %q", kind, name)
		}
	}

	out := Parsed{Event: history.Event{V: history.Version, Source: history.SourceCandidate, Kind: kind, Node: node}}
	e := &out.Event
	if v, ok := raw["node"]; ok {
		s, isStr := v.(string)
		if !isStr || s != node {
			return Parsed{}, violation(`"node" %v is not this candidate's id %q (omit it; the harness adds it)`, quoteAny(v), node)
		}
	}
	if v, ok := raw["t"]; ok {
		if e.T, err = positiveInt("t", v); err != nil {
			return Parsed{}, err
		}
		if receivedAt > 0 && e.T > receivedAt {
			return Parsed{}, violation(`"t" %d is after the harness received the line (%d): use the host's CLOCK_MONOTONIC in ns, or omit "t"`, e.T, receivedAt)
		}
	} else {
		e.T, e.Stamped = receivedAt, true
		if e.T <= 0 {
			return Parsed{}, violation(`no "t" and no receipt time to stamp the event with`)
		}
	}
	if v, ok := raw["token"]; ok {
		if e.Token, err = positiveInt("token", v); err != nil {
			return Parsed{}, err
		}
	}
	if v, ok := raw["call_t"]; ok {
		if e.CallT, err = positiveInt("call_t", v); err != nil {
			return Parsed{}, err
		}
		if e.CallT > e.T {
			return Parsed{}, violation(`"call_t" %d is after "t" %d: call_t is when the request (write, or the acquire that won) was sent, t when its answer came`, e.CallT, e.T)
		}
	}
	if v, ok := raw["write_id"]; ok {
		if e.WriteID, err = text("write_id", v, maxWriteID); err != nil {
			return Parsed{}, err
		}
	}
	if v, ok := raw["result"]; ok {
		if e.Result, err = text("result", v, 16); err != nil {
			return Parsed{}, err
		}
		if e.Result != history.ResultAccepted && e.Result != history.ResultRejected && e.Result != history.ResultUnknown {
			return Parsed{}, violation(`"result" %q: want accepted, rejected or unknown`, e.Result)
		}
	}
	if v, ok := raw["reason"]; ok {
		if e.Reason, err = text("reason", v, maxReason); err != nil {
			return Parsed{}, err
		}
	}
	if v, ok := raw["name"]; ok {
		if e.Name, err = text("name", v, maxStep); err != nil {
			return Parsed{}, err
		}
		if !ValidStepName(e.Name) {
			return Parsed{}, violation(`step "name" %q: use letters, digits, '-', '_' and '.' (e.g. lock-acquired)`, e.Name)
		}
	}
	if v, ok := raw["clock"]; ok {
		if s, isStr := v.(string); !isStr || s != ClockOffsetFile {
			return Parsed{}, violation(`"clock" must be %q (the only declaration defined in contract v%d)`, ClockOffsetFile, Version)
		}
		out.ClockAware = true
	}
	if err := e.Validate(); err != nil {
		return Parsed{}, violation("%v", err)
	}
	return out, nil
}

// scanObject reads exactly one flat JSON object of strings and numbers, rejecting duplicate
// keys, nesting and trailing data (encoding/json alone would silently take the last duplicate).
func scanObject(line []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, violation("not a JSON object: %v", errOr(err, "expected '{'"))
	}
	raw := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, violation("invalid JSON: %v", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, violation("invalid JSON object key %v", tok)
		}
		if _, dup := raw[key]; dup {
			return nil, violation("field %q appears twice", key)
		}
		val, err := dec.Token()
		if err != nil {
			return nil, violation("invalid JSON value for %q: %v", key, err)
		}
		switch v := val.(type) {
		case string, json.Number:
			raw[key] = v
		case json.Delim:
			return nil, violation("field %q must be a string or an integer, not an object or array", key)
		default: // bool, null
			return nil, violation("field %q must be a string or an integer, not %v", key, quoteAny(v))
		}
		if _, known := knownFields[key]; !known {
			return nil, violation("unknown field %q (contract v%d fields: t, kind, node, token, write_id, call_t, result, reason, clock, name)", key, Version)
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, violation("invalid JSON: %v", errOr(err, "unterminated object"))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, violation("trailing data after the JSON object: one event per line")
	}
	return raw, nil
}

var knownFields = map[string]struct{}{
	"t": {}, "kind": {}, "node": {}, "token": {}, "write_id": {}, "call_t": {}, "result": {}, "reason": {}, "clock": {}, "name": {},
}

// ValidStepName reports whether s can name a step: 1-64 letters, digits, '-', '_', '.'
// (so it reads unquoted in a nemesis spec, on=step:NAME).
func ValidStepName(s string) bool {
	if s == "" || len(s) > maxStep {
		return false
	}
	for _, c := range s {
		ok := c == '-' || c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if !ok {
			return false
		}
	}
	return true
}

func positiveInt(name string, v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, violation("%q must be an integer, not the string %s", name, quoteAny(v))
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, violation("%q %s is not an integer that fits in 64 bits", name, n)
	}
	if i <= 0 {
		return 0, violation("%q must be >= 1, got %d", name, i)
	}
	return i, nil
}

func text(name string, v any, max int) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", violation("%q must be a string, not %v", name, v)
	}
	if s == "" {
		return "", violation("%q must not be empty", name)
	}
	if len(s) > max {
		return "", violation("%q is %d bytes long, the limit is %d", name, len(s), max)
	}
	return s, nil
}

func quoteAny(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

func errOr(err error, msg string) string {
	if err != nil {
		return err.Error()
	}
	return msg
}
