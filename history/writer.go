package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// flushEvery bounds how much a harness crash can lose: at most this much of buffered events.
const flushEvery = 100 * time.Millisecond

// Writer appends events to history.jsonl. It is safe for concurrent use; Seq follows the
// order in which Append was called.
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	buf    *bufio.Writer
	seq    int64
	err    error // first write error; later appends return it
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// Create creates (or truncates) the history file at path and starts the periodic flusher.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create history: %w", err)
	}
	w := &Writer{f: f, buf: bufio.NewWriterSize(f, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go w.flushLoop()
	return w, nil
}

func (w *Writer) flushLoop() {
	defer close(w.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			if w.err == nil && w.buf.Buffered() > 0 {
				w.err = w.buf.Flush()
			}
			w.mu.Unlock()
		}
	}
}

// Append stamps the event with the schema version and the next Seq (and with Now when it
// has no time), validates it and writes it. It returns the event as written.
func (w *Writer) Append(e Event) (Event, error) {
	e.V = Version
	if e.T == 0 {
		e.T = Now()
		e.Stamped = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return e, fmt.Errorf("history: append after close (%s %s)", e.Source, e.Kind)
	}
	if w.err != nil {
		return e, w.err
	}
	w.seq++
	e.Seq = w.seq
	if err := e.Validate(); err != nil {
		w.seq--
		return e, fmt.Errorf("history: refusing invalid event: %w", err)
	}
	line, err := json.Marshal(&e)
	if err != nil {
		w.seq--
		return e, err
	}
	line = append(line, '\n')
	if _, err := w.buf.Write(line); err != nil {
		w.err = err
	}
	return e, w.err
}

// Flush writes buffered events to the file.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.buf.Flush()
	}
	return w.err
}

// Close flushes, syncs and closes the file. It is safe to call more than once.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.buf.Flush()
	}
	if err := w.f.Sync(); err != nil && w.err == nil {
		w.err = err
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}
