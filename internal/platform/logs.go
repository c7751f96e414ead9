package platform

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

const tailLines = 30

// MaxLogLine caps one output line. The rest of a longer line, up to its newline, is
// dropped and counted, and the kept part ends in a marker. A valid event line is far
// shorter (contract.MaxLineBytes), so a cut never loses an event; it bounds the
// harness's memory and CPU per byte a candidate prints without a newline.
const MaxLogLine = 1 << 20

// Stream indexes, as stdcopy demultiplexes them.
const (
	streamStdout = 0
	streamStderr = 1
)

// logStream follows a container's logs across restarts. Docker stamps stdout and stderr in
// separate goroutines, so timestamps are ordered per stream only: nothing is ever dropped
// for being older than a line of the other stream. A follower that starts after another
// (restart, or a broken stream reconnected) replays from the oldest per-stream newest
// timestamp; only that replay is deduplicated, per stream.
type logStream struct {
	cli      *client.Client
	path     string
	onStdout func([]byte)
	onGap    func(string) // a stretch of output may be lost; the argument says why

	mu       sync.Mutex
	file     *os.File
	done     chan struct{} // closed when the current follower ends
	cancel   context.CancelFunc
	closed   bool
	streams  [2]streamState
	tailRing []string
	replayed int64 // lines skipped as replays of an earlier follower (not lost)
	cut      int64 // lines cut at MaxLogLine
}

// streamState is one stream's partial line and replay bookkeeping.
type streamState struct {
	buf     []byte    // the partial line, engine timestamps stripped, at most MaxLogLine bytes
	bufTS   time.Time // engine timestamp of the partial line's first piece
	inLine  bool      // a partial line is open
	dropped int64     // bytes of the open line beyond MaxLogLine

	lastTS   time.Time // newest timestamp delivered on this stream
	atLastTS int       // lines delivered with timestamp == lastTS
	replay   bool      // the current follower may repeat lines already delivered
	skipAtTS int       // lines at lastTS still to skip while replaying
}

func newLogStream(cli *client.Client, dir, node string, onStdout func([]byte), onGap func(string)) (*logStream, error) {
	ls := &logStream{cli: cli, onStdout: onStdout, onGap: onGap}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("log dir %s: %w", dir, err)
		}
		ls.path = filepath.Join(dir, node+".log")
		f, err := os.OpenFile(ls.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("log file: %w", err)
		}
		ls.file = f
	}
	return ls, nil
}

// maxReconnects bounds how often one follower reopens a stream that broke while the
// container still ran.
const maxReconnects = 5

// follow starts a follower for the container's current run, after the previous one ended.
func (ls *logStream) follow(containerID string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return
	}
	prev := ls.done
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	ls.done, ls.cancel = done, cancel
	go func() {
		defer close(done)
		defer cancel()
		if prev != nil {
			<-prev
		}
		for attempt := 0; ; attempt++ {
			err := ls.followOnce(ctx, containerID)
			if err == nil || ctx.Err() != nil {
				return
			}
			// The stream broke. If the container still runs, reopen it: the replay from
			// the newest delivered timestamps loses nothing.
			running := false
			if res, ierr := ls.cli.ContainerInspect(ctx, containerID, client.ContainerInspectOptions{}); ierr == nil && res.Container.State != nil {
				running = res.Container.State.Running
			}
			if !running || attempt >= maxReconnects {
				ls.gap(fmt.Sprintf("log stream ended with an error and was not reopened (%v); output after the break may be missing", err))
				return
			}
			ls.note(fmt.Sprintf("[splitbrain: log stream broke (%v); reopened]", err))
		}
	}()
}

// followOnce reads one log stream to its end (nil) or until it breaks.
func (ls *logStream) followOnce(ctx context.Context, containerID string) error {
	ls.mu.Lock()
	since := ls.startReplayLocked()
	ls.mu.Unlock()
	rc, err := ls.cli.ContainerLogs(ctx, containerID, client.ContainerLogsOptions{
		ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true, Since: since,
	})
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = stdcopy.StdCopy(lineWriter{ls, streamStdout}, lineWriter{ls, streamStderr}, rc)
	ls.flushPartial()
	return err
}

// startReplayLocked prepares a new follower: it asks the engine for everything from the
// oldest of the streams' newest delivered timestamps (Since is inclusive) and arms each
// stream to skip what it already delivered. "" (everything) for the first follower.
func (ls *logStream) startReplayLocked() string {
	var since time.Time
	for i := range ls.streams {
		st := &ls.streams[i]
		st.replay = !st.lastTS.IsZero()
		st.skipAtTS = st.atLastTS
		if st.replay && (since.IsZero() || st.lastTS.Before(since)) {
			since = st.lastTS
		}
	}
	if since.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond())
}

// lineWriter receives one stdcopy frame per Write: one engine log message, prefixed with
// its timestamp. A line longer than the engine's piece size (16 KiB for json-file) comes
// as several messages, each with its own timestamp, the last one ending in '\n'.
type lineWriter struct {
	ls     *logStream
	stream int
}

func (w lineWriter) Write(p []byte) (int, error) {
	w.ls.mu.Lock()
	defer w.ls.mu.Unlock()
	w.ls.pieceLocked(w.stream, p)
	return len(p), nil
}

// pieceLocked adds one timestamped message to its stream's partial line, emitting every
// line it completes. Appends in place: the cost is linear in the bytes received.
func (ls *logStream) pieceLocked(stream int, p []byte) {
	st := &ls.streams[stream]
	ts, body := splitTimestamp(p)
	for len(body) > 0 {
		if !st.inLine {
			st.inLine, st.bufTS, st.buf, st.dropped = true, ts, st.buf[:0], 0
		}
		i := bytes.IndexByte(body, '\n')
		seg := body
		if i >= 0 {
			seg = body[:i]
		}
		if room := MaxLogLine - len(st.buf); room < len(seg) {
			st.dropped += int64(len(seg) - max(room, 0))
			seg = seg[:max(room, 0)]
		}
		st.buf = append(st.buf, seg...)
		if i < 0 {
			return
		}
		ls.completeLocked(stream)
		body = body[i+1:]
	}
}

// completeLocked emits the stream's open line.
func (ls *logStream) completeLocked(stream int) {
	st := &ls.streams[stream]
	line := st.buf
	if st.dropped > 0 {
		ls.cut++
		line = append(line, fmt.Sprintf(" [splitbrain: line cut at %d bytes, %d more bytes dropped]", MaxLogLine, st.dropped)...)
	}
	ls.emitLocked(stream, st.bufTS, line)
	st.inLine, st.dropped = false, 0
	if cap(st.buf) > 64<<10 {
		st.buf = nil // do not pin a megabyte per stream after one long line
	} else {
		st.buf = line[:0]
	}
}

func (ls *logStream) flushPartial() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for s := range ls.streams {
		if ls.streams[s].inLine {
			ls.completeLocked(s)
		}
	}
}

// emitLocked handles one complete line: replay dedup, file, tail, stdout callback.
func (ls *logStream) emitLocked(stream int, ts time.Time, line []byte) {
	st := &ls.streams[stream]
	if !ts.IsZero() {
		if st.replay {
			switch {
			case ts.Before(st.lastTS):
				ls.replayed++
				return // delivered by an earlier follower
			case ts.Equal(st.lastTS) && st.skipAtTS > 0:
				st.skipAtTS--
				ls.replayed++
				return
			}
			st.replay = false // past the replay: from here every line is new
		}
		switch {
		case ts.After(st.lastTS):
			st.lastTS, st.atLastTS = ts, 1
		case ts.Equal(st.lastTS):
			st.atLastTS++
		}
	}
	ls.writeLocked(line)
	if stream == streamStdout && ls.onStdout != nil {
		ls.onStdout(append([]byte(nil), line...))
	}
}

func (ls *logStream) writeLocked(line []byte) {
	if ls.file != nil {
		ls.file.Write(append(append(make([]byte, 0, len(line)+1), line...), '\n'))
	}
	s := string(line)
	if len(s) > 4096 {
		s = s[:4096] + "…"
	}
	ls.tailRing = append(ls.tailRing, s)
	if len(ls.tailRing) > tailLines {
		ls.tailRing = ls.tailRing[len(ls.tailRing)-tailLines:]
	}
}

// gap notes in the log, and reports, that output may have been lost.
func (ls *logStream) gap(why string) {
	ls.note("[splitbrain: " + why + "]")
	if ls.onGap != nil {
		ls.onGap(why)
	}
}

// note writes a harness remark into the node's log.
func (ls *logStream) note(s string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.writeLocked([]byte(s))
}

// maxTimestampLen is the longest RFC 3339 timestamp with nanoseconds and a zone offset.
const maxTimestampLen = len("2006-01-02T15:04:05.999999999-07:00")

// splitTimestamp separates Docker's RFC 3339 timestamp prefix from the line.
func splitTimestamp(raw []byte) (time.Time, []byte) {
	i := bytes.IndexByte(raw[:min(len(raw), maxTimestampLen+1)], ' ')
	if i <= 0 {
		return time.Time{}, raw
	}
	ts, err := time.Parse(time.RFC3339Nano, string(raw[:i]))
	if err != nil {
		return time.Time{}, raw
	}
	return ts, raw[i+1:]
}

// waitIdle waits (bounded) until the current follower has ended.
func (ls *logStream) waitIdle(ctx context.Context) {
	ls.mu.Lock()
	done := ls.done
	ls.mu.Unlock()
	if done == nil {
		return
	}
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

func (ls *logStream) tail() string {
	// Give the follower a moment to catch up with output written just before a failure.
	time.Sleep(200 * time.Millisecond)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return strings.Join(ls.tailRing, "\n")
}

func (ls *logStream) close() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return
	}
	ls.closed = true
	if ls.cancel != nil {
		ls.cancel()
	}
	if ls.file != nil {
		ls.file.Close()
	}
}
