package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/splitbrain-chaos/splitbrain/assess"
	"github.com/splitbrain-chaos/splitbrain/assess/assessproto"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// assessStdin is where `assess --driven` reads its commands; tests replace it.
var assessStdin io.Reader = os.Stdin

// eventWriter prints protocol events, one JSON line each, from any goroutine.
type eventWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *eventWriter) emit(ev assessproto.Event) {
	b, err := json.Marshal(ev)
	if err != nil { // cannot happen for these types; say so rather than print half a line
		b, _ = json.Marshal(assessproto.Event{Event: assessproto.Log, Line: "assess: event: " + err.Error()})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.w.Write(append(b, '\n'))
}

// lineEvents turns written text into one Log event per whole line, those starting with
// prefix only when prefix is set (the image build's progress lines, not its output).
type lineEvents struct {
	ev     *eventWriter
	prefix string
	mu     sync.Mutex
	buf    []byte
}

func (l *lineEvents) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := strings.TrimRight(string(l.buf[:i]), "\r")
		l.buf = l.buf[i+1:]
		if strings.HasPrefix(line, l.prefix) {
			l.ev.emit(assessproto.Event{Event: assessproto.Log, Line: line})
		}
	}
}

// runAssessDriven is `assess --driven`: splitbraintest's side of the protocol. The session
// is assess.Session, as splitbrain assess's own loop, without the resume state (a go test
// starts over); each check runs when a command asks for it, so go test -run picks checks.
func runAssessDriven(ctx context.Context, o assess.Options, plan []assess.Check, list bool, in io.Reader, out io.Writer) (int, error) {
	// A parent that died (go test killed) leaves stdout a broken pipe: the next event must be
	// a write error, not SIGPIPE's death, so that EOF on stdin still gets the teardown.
	signal.Ignore(syscall.SIGPIPE)
	ev := &eventWriter{w: out}
	if list {
		ev.emit(assessproto.Event{Event: assessproto.Plan, Checks: plan, Budget: o.Budget})
		return exitValid, nil
	}
	fatal := func(stage string, err error, file string) (int, error) {
		ev.emit(assessproto.Event{Event: assessproto.Fatal, Stage: stage, Error: err.Error(), File: file})
		return exitHarness, nil
	}
	if err := assess.Preflight(o); err != nil {
		return fatal("session", err, "")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o.Progress = &lineEvents{ev: ev}
	o.Started = func(what, id string) { ev.emit(assessproto.Event{Event: assessproto.Started, What: what, ID: id}) }
	session, checks, err := assess.NewSession(o)
	if err != nil {
		return fatal("session", err, "")
	}
	closed := false
	defer func() {
		if !closed { // a fatal error after the session started: still stop the store clusters
			session.Close(context.WithoutCancel(ctx))
		}
	}()
	ev.emit(assessproto.Event{Event: assessproto.Plan, Checks: checks, Budget: session.Budget()})
	eng, err := platform.Connect(ctx)
	if err != nil {
		return fatal("engine", err, "")
	}
	eng.Close()
	logPath := filepath.Join(o.OutDir, "images.log")
	f, err := os.Create(logPath)
	if err != nil {
		return fatal("images", err, "")
	}
	err = session.EnsureImages(ctx, io.MultiWriter(f, &lineEvents{ev: ev, prefix: "images: "}))
	f.Close()
	if err != nil {
		return fatal("images", err, logPath)
	}
	ev.emit(assessproto.Event{Event: assessproto.Ready, Budget: session.Budget()})

	// Commands are read beside the checks, so cancel reaches a running one; EOF without
	// close is the parent gone (killed by its -timeout, say): cancel, then close.
	cmds := make(chan assessproto.Command)
	go func() {
		defer close(cmds)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			c, err := assessproto.ParseCommand(sc.Text())
			if err != nil {
				ev.emit(assessproto.Event{Event: assessproto.Log, Line: "assess: " + err.Error()})
				continue
			}
			if c.Verb == assessproto.CmdCancel {
				cancel()
				continue
			}
			cmds <- c
			if c.Verb == assessproto.CmdClose {
				return
			}
		}
		cancel()
		cmds <- assessproto.Command{Verb: assessproto.CmdClose}
	}()
	for c := range cmds {
		switch c.Verb {
		case assessproto.CmdBudget:
			session.SetBudget(c.Budget)
		case assessproto.CmdCheck:
			i := slices.IndexFunc(checks, func(p assess.Check) bool { return p.Name == c.Arg })
			if i < 0 {
				ev.emit(assessproto.Event{Event: assessproto.Result, Error: fmt.Sprintf("no check %q in the plan", c.Arg)})
				continue
			}
			g, err := session.Check(ctx, checks[i])
			res := assessproto.Event{Event: assessproto.Result, Graded: &g}
			if err != nil {
				res.Error = err.Error()
			}
			ev.emit(res)
		case assessproto.CmdClose:
			closed = true
			sc, err := session.Close(ctx)
			res := assessproto.Event{Event: assessproto.Scorecard, Scorecard: sc}
			if err != nil {
				res.Error = err.Error()
			}
			ev.emit(res)
			if err != nil {
				return exitHarness, nil
			}
			return exitValid, nil
		}
	}
	return exitHarness, fmt.Errorf("assess --driven: the commands ended without close")
}
