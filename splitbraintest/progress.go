package splitbraintest

import (
	"bytes"
	"strings"
	"sync"
)

// lineLogger sends progress lines to the running (sub)test's log, and nowhere once Assess
// returned: a late line from a run's goroutine must not log to a finished test.
type lineLogger struct {
	mu  sync.Mutex
	t   logger
	buf []byte
}

// logger is the part of testing.TB the progress lines need.
type logger interface{ Log(args ...any) }

func (l *lineLogger) attach(t logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t = t
}

func (l *lineLogger) detach() { l.attach(nil) }

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		if l.t != nil {
			l.t.Log(strings.TrimRight(string(l.buf[:i]), "\r"))
		}
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

// prefixFilter passes the lines that start with prefix to a test log, whole.
type prefixFilter struct {
	prefix string
	to     logger
	buf    []byte
}

func (p *prefixFilter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if line := string(p.buf[:i]); strings.HasPrefix(line, p.prefix) {
			p.to.Log(line)
		}
		p.buf = p.buf[i+1:]
	}
}
