package splitbraintest

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"github.com/splitbrain-chaos/splitbrain/assess/assessproto"
)

// child is a running `splitbrain assess --driven` (assess/assessproto): the checks run
// there, so the test binary links none of the stores' client libraries.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tail
	// events are the child's events but Log and Started, which go to the test log as they
	// come; closed once stdout ended and the process was waited for (exit in exitErr).
	events  chan assessproto.Event
	exitErr error

	mu     sync.Mutex
	bad    []string // stdout lines that are not events
	inDone bool     // stdin closed
}

// startChild starts bin with args and reads its events; progress gets the Log lines and the
// started-id lines, for the (sub)test running at the time.
func startChild(bin string, args []string, progress *lineLogger) (*child, error) {
	c := &child{cmd: exec.Command(bin, args...), stderr: &tail{max: 64 << 10}, events: make(chan assessproto.Event, 16)}
	c.cmd.Stderr = c.stderr
	// A process group of its own: the terminal's Ctrl-C reaches go test only, which passes
	// one cancel on; a second Ctrl-C kills go test at once and the child, seeing its stdin
	// end, still tears down.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	started := logStarted(progress)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20) // a scorecard event holds every result
		for sc.Scan() {
			ev, err := assessproto.Parse(sc.Bytes())
			switch {
			case err != nil:
				c.mu.Lock()
				c.bad = append(c.bad, sc.Text())
				c.mu.Unlock()
				fmt.Fprintf(progress, "splitbraintest: %v\n", err)
			case ev.Event == assessproto.Log:
				fmt.Fprintln(progress, ev.Line)
			case ev.Event == assessproto.Started:
				started(ev.What, ev.ID)
			default:
				c.events <- ev
			}
		}
		if err := sc.Err(); err != nil {
			c.mu.Lock()
			c.bad = append(c.bad, "(reading the events: "+err.Error()+")")
			c.mu.Unlock()
			io.Copy(io.Discard, stdout) // let the child finish writing and exit
		}
		c.exitErr = c.cmd.Wait()
		close(c.events)
	}()
	return c, nil
}

// send writes one command; after the child's stdin closed it does nothing.
func (c *child) send(cmd string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inDone {
		return fmt.Errorf("splitbrain assess: its input is closed")
	}
	_, err := io.WriteString(c.stdin, cmd+"\n")
	return err
}

// next is the child's next event, which must be of kind want; a Fatal event, an event of
// another kind, or the child's exit is an error that says what it printed.
func (c *child) next(want string) (assessproto.Event, error) {
	ev, ok := <-c.events
	switch {
	case !ok:
		return ev, fmt.Errorf("splitbrain assess exited (%v) before its %q event%s", c.exitErr, want, c.output())
	case ev.Event == assessproto.Fatal:
		return ev, fatalError{ev}
	case ev.Event != want:
		return ev, fmt.Errorf("splitbrain assess sent a %q event where its %q was due%s", ev.Event, want, c.output())
	}
	return ev, nil
}

// fatalError is the child's Fatal event.
type fatalError struct{ ev assessproto.Event }

func (f fatalError) Error() string { return f.ev.Error }

// output is what the child printed besides its events: its stderr tail and any stdout line
// that was not an event.
func (c *child) output() string {
	var b strings.Builder
	if s := strings.TrimSpace(c.stderr.String()); s != "" {
		b.WriteString("\nits stderr:\n" + s)
	}
	if bad := c.badLines(); len(bad) > 0 {
		b.WriteString("\nits stdout lines that are not events:\n" + strings.Join(bad, "\n"))
	}
	return b.String()
}

func (c *child) badLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bad...)
}

// finish closes the child's stdin (without close before it, that is cancel then close: the
// child tears down) and waits for it to exit, draining events nobody asks for.
func (c *child) finish() error {
	c.mu.Lock()
	if !c.inDone {
		c.inDone = true
		c.stdin.Close()
	}
	c.mu.Unlock()
	for range c.events {
	}
	return c.exitErr
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
