// Package assessproto is the line protocol between splitbraintest and the `splitbrain assess
// --driven` process it starts: splitbraintest writes commands on the child's stdin, one a
// line, and reads events on its stdout, one JSON object a line. The checks run in the child,
// so a user's go test links this package and assess/scorecard (the standard library only),
// not the stores' client libraries.
//
// The child prints Plan once the battery is planned, Ready once the engine answered and the
// images are there, a Result for each check command and a Scorecard after close; Log and
// Started at any time; Fatal (then exits) when it cannot go on.
//
// It is not a stable API: it changes with the binary, which speaks it to the splitbraintest
// of its own version. It sits under assess/ rather than internal/ so that the top-level
// folders keep importing downward (TestFoldersPointDown): internal/ is below assess/.
package assessproto

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/assess/scorecard"
)

// Names splitbraintest needs from packages it must not link (internal/images, reports);
// cmd/splitbrain's tests check they agree.
const (
	EnvBinary  = "SPLITBRAIN_BINARY"        // images.EnvBinary
	EnvProfile = "SPLITBRAIN_IMAGE_PROFILE" // images.EnvProfile
	ReportFile = "report.html"              // reports.ReportFile
)

// Event kinds, the child's lines.
const (
	Plan      = "plan"      // Checks, Budget: the session's battery, in order
	Ready     = "ready"     // Budget: the images are there, the budget's clock starts
	Log       = "log"       // Line: a progress line for the running (sub)test's log
	Started   = "started"   // What ("run", "pool"), ID: a run or store cluster starts
	Result    = "result"    // Graded, Error (a harness error): one check, after its command
	Scorecard = "scorecard" // Scorecard, Error: after close, the scorecard is written
	Fatal     = "fatal"     // Stage ("engine", "images", "session"), Error, File: the child stops
)

// Event is one line of the child's stdout.
type Event struct {
	Event     string               `json:"event"`
	Checks    []scorecard.Check    `json:"checks,omitempty"`
	Budget    time.Duration        `json:"budget,omitempty"`
	Line      string               `json:"line,omitempty"`
	What      string               `json:"what,omitempty"`
	ID        string               `json:"id,omitempty"`
	Graded    *scorecard.Graded    `json:"graded,omitempty"`
	Scorecard *scorecard.Scorecard `json:"scorecard,omitempty"`
	Stage     string               `json:"stage,omitempty"`
	Error     string               `json:"error,omitempty"`
	File      string               `json:"file,omitempty"`
}

// Parse reads one event line; a line that is not an event is an error quoting it.
func Parse(line []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil || e.Event == "" {
		return Event{}, fmt.Errorf("not a splitbrain assess --driven event: %q", line)
	}
	return e, nil
}

// Commands, the parent's lines: "budget 5m0s", "check NAME", "cancel", "close". EOF on the
// child's stdin without close (the parent died) is cancel then close.
const (
	CmdBudget = "budget" // the budget, fitted to go test's -timeout; counted from Ready
	CmdCheck  = "check"  // run the named check of the plan, answer with a Result
	CmdCancel = "cancel" // end the checks' context: the running check heals and tears down
	CmdClose  = "close"  // write the scorecard, stop the store clusters, answer, exit
)

// Command is one parsed command line.
type Command struct {
	Verb   string
	Arg    string
	Budget time.Duration
}

// ParseCommand reads one command line.
func ParseCommand(line string) (Command, error) {
	verb, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	c := Command{Verb: verb, Arg: arg}
	switch verb {
	case CmdBudget:
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("command %q: want budget DURATION (positive)", line)
		}
		c.Budget = d
	case CmdCheck:
		if arg == "" {
			return c, fmt.Errorf("command %q: want check NAME", line)
		}
	case CmdCancel, CmdClose:
		if arg != "" {
			return c, fmt.Errorf("command %q takes no argument", line)
		}
	default:
		return c, fmt.Errorf("unknown command %q (budget, check, cancel, close)", line)
	}
	return c, nil
}
