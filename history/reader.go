package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

// maxLine is the longest history line accepted; candidate output is truncated long before.
const maxLine = 1 << 20

// ParseError names the line of a history file that could not be read and why.
type ParseError struct {
	File string
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	name := e.File
	if name == "" {
		name = "history"
	}
	return fmt.Sprintf("%s line %d: %v (each line must be one JSON event of schema v%d; see docs/history.md)",
		name, e.Line, e.Err, Version)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Info describes what a read found besides the events.
type Info struct {
	// TruncatedTail is set when the last line had no newline and did not parse: the writer
	// was cut off mid-line (harness crash). Everything before it is kept.
	TruncatedTail bool
}

// Scan reads events one by one and calls fn for each. name is used in errors.
func Scan(r io.Reader, name string, fn func(Event) error) (Info, error) {
	var info Info
	br := bufio.NewReaderSize(r, 256<<10)
	lineNo := 0
	var lastSeq int64
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Long line: collect it whole, but refuse absurd sizes.
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(full) <= maxLine {
				line, err = br.ReadSlice('\n')
				full = append(full, line...)
			}
			if len(full) > maxLine {
				return info, &ParseError{name, lineNo + 1, fmt.Errorf("line longer than %d bytes", maxLine)}
			}
			line = full
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return info, fmt.Errorf("%s: read: %w", name, err)
		}
		atEOF := errors.Is(err, io.EOF)
		if len(line) == 0 && atEOF {
			return info, nil
		}
		lineNo++
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			if atEOF {
				return info, nil
			}
			continue
		}
		var e Event
		perr := decodeStrict(trimmed, &e)
		if perr == nil {
			perr = e.Validate()
		}
		if perr == nil && e.Seq <= lastSeq {
			perr = fmt.Errorf("seq %d does not follow seq %d: lines are out of order or duplicated", e.Seq, lastSeq)
		}
		if perr != nil {
			if atEOF && line[len(line)-1] != '\n' {
				info.TruncatedTail = true
				return info, nil
			}
			return info, &ParseError{name, lineNo, perr}
		}
		lastSeq = e.Seq
		if err := fn(e); err != nil {
			return info, err
		}
		if atEOF {
			return info, nil
		}
	}
}

func decodeStrict(b []byte, e *Event) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(e); err != nil {
		return fmt.Errorf("not a history event: %w", err)
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// Read reads a whole history.
func Read(r io.Reader, name string) ([]Event, Info, error) {
	var evs []Event
	info, err := Scan(r, name, func(e Event) error {
		evs = append(evs, e)
		return nil
	})
	return evs, info, err
}

// ReadFile reads the history file at path.
func ReadFile(path string) ([]Event, Info, error) {
	f, err := runfile.Open(path, runfile.MaxHistory)
	if err != nil {
		return nil, Info{}, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}
