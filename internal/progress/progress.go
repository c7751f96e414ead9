package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// ProgressMode selects how a run's progress is shown.
type ProgressMode int

const (
	ProgressAuto  ProgressMode = iota // a redrawn status line on a terminal, plain lines otherwise
	ProgressPlain                     // a plain line every Period (CI logs)
	ProgressQuiet                     // nothing but the summary
	ProgressJSON                      // one JSON object per line: status events and the summary
)

// ParseProgressMode maps CLI flags to a mode: --quiet and --json exclude each other.
func ParseProgressMode(quiet, asJSON bool) (ProgressMode, error) {
	switch {
	case quiet && asJSON:
		return 0, fmt.Errorf("--quiet and --json exclude each other: --json already prints only machine-readable events")
	case quiet:
		return ProgressQuiet, nil
	case asJSON:
		return ProgressJSON, nil
	}
	return ProgressAuto, nil
}

// Leader is a candidate that believes it leads.
type Leader struct {
	Node  string `json:"node"`
	Token int64  `json:"token"`
}

// Status is a snapshot of a running test for the progress display.
type Status struct {
	Phase          string        `json:"phase"`
	Elapsed        time.Duration `json:"-"`
	Total          time.Duration `json:"-"`
	Leaders        []Leader      `json:"leaders"`
	ActiveFaults   []string      `json:"active_faults"`
	Elections      int64         `json:"elections"`
	WritesAccepted int64         `json:"writes_accepted"`
	WritesRejected int64         `json:"writes_rejected"`
}

// Line renders the status as one line.
func (s Status) Line() string {
	leader := "none"
	if len(s.Leaders) > 0 {
		parts := make([]string, len(s.Leaders))
		for i, l := range s.Leaders {
			parts[i] = fmt.Sprintf("%s/%d", l.Node, l.Token)
		}
		leader = strings.Join(parts, "+")
		if len(s.Leaders) > 1 {
			leader += " SPLIT-BRAIN"
		}
	}
	faults := "none"
	if len(s.ActiveFaults) > 0 {
		faults = strings.Join(s.ActiveFaults, ", ")
	}
	phase := s.Phase
	if phase == "" {
		phase = "starting"
	}
	// Elapsed/total covers the timed phases (warmup to recovery); setup and teardown show
	// how long they have taken so far, which has no planned total.
	clock := fmtClock(s.Elapsed)
	if s.Total > 0 {
		clock = fmtClock(min(s.Elapsed, s.Total)) + "/" + fmtClock(s.Total)
	}
	return fmt.Sprintf("%s %s | leader %s | faults %s | elections %d | writes %d ok %d rejected",
		phase, clock, leader, faults, s.Elections, s.WritesAccepted, s.WritesRejected)
}

func fmtClock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// Progress prints a run's progress. Update may be called as often as the caller likes
// (every 200 ms is fine): a terminal line is redrawn at most every RedrawEvery, plain and
// JSON lines are printed at most every Period. It is safe for concurrent use.
type Progress struct {
	mu          sync.Mutex
	w           io.Writer
	mode        ProgressMode
	tty         bool
	width       func() int
	Period      time.Duration // plain/JSON lines; default 5s
	RedrawEvery time.Duration // terminal redraws; default 100ms
	now         func() time.Time
	last        time.Time
	drawn       bool // a status line is on the terminal and must be cleared before other output
	lastPhase   string
}

// NewProgress makes a printer for w. In ProgressAuto mode it redraws one line when w is a
// terminal (golang.org/x/term), and prints plain periodic lines otherwise.
func NewProgress(w io.Writer, mode ProgressMode) *Progress {
	p := &Progress{w: w, mode: mode, Period: 5 * time.Second, RedrawEvery: 100 * time.Millisecond, now: time.Now, width: func() int { return 0 }}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
		p.width = func() int {
			if c, _, err := term.GetSize(int(f.Fd())); err == nil {
				return c
			}
			return 0
		}
	}
	if mode == ProgressPlain {
		p.tty = false
	}
	return p
}

// Update shows a new status.
func (p *Progress) Update(s Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	phaseChanged := s.Phase != p.lastPhase
	p.lastPhase = s.Phase
	switch {
	case p.mode == ProgressQuiet:
		return
	case p.mode == ProgressJSON:
		if !phaseChanged && now.Sub(p.last) < p.Period {
			return
		}
		p.last = now
		p.emitJSON("status", s, map[string]any{"elapsed_s": s.Elapsed.Seconds(), "total_s": s.Total.Seconds()})
	case p.tty:
		if !phaseChanged && now.Sub(p.last) < p.RedrawEvery {
			return
		}
		p.last = now
		line := s.Line()
		if w := p.width(); w > 1 && len([]rune(line)) > w-1 {
			line = string([]rune(line)[:w-2]) + "…"
		}
		fmt.Fprint(p.w, "\r\x1b[2K"+line)
		p.drawn = true
	default:
		// A new phase is printed at once; otherwise one line per Period.
		if !phaseChanged && now.Sub(p.last) < p.Period {
			return
		}
		p.last = now
		fmt.Fprintln(p.w, s.Line())
	}
}

// Event prints a notable moment (fault applied, leader elected, ...) as its own line: above
// the status line on a terminal, a line in plain mode, an event object in JSON mode.
func (p *Progress) Event(kind, message string, fields map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.mode {
	case ProgressQuiet:
		return
	case ProgressJSON:
		extra := map[string]any{"message": message}
		for k, v := range fields {
			extra[k] = v
		}
		p.emitJSON(kind, nil, extra)
		return
	}
	p.clearLocked()
	fmt.Fprintln(p.w, message)
}

// Summary ends the display: it clears the status line and prints the end-of-run summary
// (printed in every mode, --quiet included; in JSON mode as {"type":"summary",...} with
// the given fields).
func (p *Progress) Summary(text string, fields map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == ProgressJSON {
		extra := map[string]any{"text": text}
		for k, v := range fields {
			extra[k] = v
		}
		p.emitJSON("summary", nil, extra)
		return
	}
	p.clearLocked()
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	fmt.Fprint(p.w, text)
}

func (p *Progress) clearLocked() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[2K")
		p.drawn = false
	}
}

func (p *Progress) emitJSON(typ string, s any, extra map[string]any) {
	obj := map[string]any{"type": typ, "time": p.now().UTC().Format(time.RFC3339Nano)}
	if s != nil {
		b, _ := json.Marshal(s)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		for k, v := range m {
			obj[k] = v
		}
	}
	for k, v := range extra {
		obj[k] = v
	}
	b, err := json.Marshal(obj)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": "error", "message": err.Error()})
	}
	p.w.Write(append(b, '\n'))
}
