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

// logStream follows a container's logs across restarts. Each (re)start gets a new follower
// that begins at the newest timestamp already seen; lines carrying exactly that timestamp
// that were already delivered are skipped, so no line is written or reported twice.
type logStream struct {
	cli      *client.Client
	path     string
	onStdout func([]byte)

	mu       sync.Mutex
	file     *os.File
	done     chan struct{} // closed when the current follower ends
	cancel   context.CancelFunc
	closed   bool
	lastTS   time.Time // newest timestamp delivered
	atLastTS int       // lines delivered with timestamp == lastTS
	skipAtTS int       // lines at lastTS still to skip in the current follower
	// resumeTS is where the current follower resumed (zero for the first one): only lines
	// at or before it can be replays. Stdout and stderr lines reach the daemon through two
	// pipes, so across streams timestamps arrive slightly out of order; comparing every
	// line with lastTS dropped a stdout event stamped just before a stderr line.
	resumeTS time.Time
	tailRing []string
	partial  [2][]byte // incomplete line per stream (0 stdout, 1 stderr)
}

func newLogStream(cli *client.Client, dir, node string, onStdout func([]byte)) (*logStream, error) {
	ls := &logStream{cli: cli, onStdout: onStdout}
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
		ls.mu.Lock()
		since := ""
		if !ls.lastTS.IsZero() {
			since = fmt.Sprintf("%d.%09d", ls.lastTS.Unix(), ls.lastTS.Nanosecond())
		}
		ls.skipAtTS, ls.resumeTS = ls.atLastTS, ls.lastTS
		ls.mu.Unlock()
		rc, err := ls.cli.ContainerLogs(ctx, containerID, client.ContainerLogsOptions{
			ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true, Since: since,
		})
		if err != nil {
			ls.note(fmt.Sprintf("[splitbrain: log stream failed: %v]", err))
			return
		}
		defer rc.Close()
		_, _ = stdcopy.StdCopy(lineWriter{ls, 0}, lineWriter{ls, 1}, rc)
		ls.flushPartial()
	}()
}

type lineWriter struct {
	ls     *logStream
	stream int
}

func (w lineWriter) Write(p []byte) (int, error) {
	w.ls.mu.Lock()
	defer w.ls.mu.Unlock()
	buf := append(w.ls.partial[w.stream], p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		w.ls.emitLocked(w.stream, buf[:i])
		buf = buf[i+1:]
	}
	w.ls.partial[w.stream] = append([]byte(nil), buf...)
	return len(p), nil
}

func (ls *logStream) flushPartial() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for s := range ls.partial {
		if len(ls.partial[s]) > 0 {
			ls.emitLocked(s, ls.partial[s])
			ls.partial[s] = nil
		}
	}
}

// emitLocked handles one timestamped line: dedup, file, tail, stdout callback.
func (ls *logStream) emitLocked(stream int, raw []byte) {
	ts, line := splitTimestamp(raw)
	if !ts.IsZero() {
		if !ls.resumeTS.IsZero() && ts.Before(ls.resumeTS) {
			return // delivered by an earlier follower (Since is inclusive)
		}
		if ts.Equal(ls.resumeTS) && ls.skipAtTS > 0 {
			ls.skipAtTS--
			return
		}
		switch {
		case ts.After(ls.lastTS):
			ls.lastTS, ls.atLastTS = ts, 1
		case ts.Equal(ls.lastTS):
			ls.atLastTS++
		}
	}
	ls.writeLocked(line)
	if stream == 0 && ls.onStdout != nil {
		ls.onStdout(append([]byte(nil), line...))
	}
}

func (ls *logStream) writeLocked(line []byte) {
	if ls.file != nil {
		ls.file.Write(append(append([]byte(nil), line...), '\n'))
	}
	ls.tailRing = append(ls.tailRing, string(line))
	if len(ls.tailRing) > tailLines {
		ls.tailRing = ls.tailRing[len(ls.tailRing)-tailLines:]
	}
}

// note writes a harness remark into the node's log.
func (ls *logStream) note(s string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.writeLocked([]byte(s))
}

// splitTimestamp separates Docker's RFC 3339 timestamp prefix from the line.
func splitTimestamp(raw []byte) (time.Time, []byte) {
	i := bytes.IndexByte(raw, ' ')
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
