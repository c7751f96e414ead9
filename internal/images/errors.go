package images

import (
	"fmt"
	"strings"
)

// tailSize is how many log lines a BuildError keeps.
const tailSize = 30

// BuildError is a failed image build: which role, which step, and the end of its log.
type BuildError struct {
	Role Role
	Step string   // e.g. "Step 2/6 : RUN apt-get update ..." or "debootstrap"
	Log  []string // last lines of the step's output
	Err  error
}

func (e *BuildError) Error() string {
	var b strings.Builder
	if e.Role != "" {
		fmt.Fprintf(&b, "building image %s", e.Role)
	} else {
		b.WriteString("building image")
	}
	if e.Step != "" {
		fmt.Fprintf(&b, " failed at %q", e.Step)
	} else {
		b.WriteString(" failed")
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	if len(e.Log) > 0 {
		b.WriteString("\n--- last lines of its output ---\n")
		b.WriteString(strings.Join(e.Log, "\n"))
	}
	return b.String()
}

func (e *BuildError) Unwrap() error { return e.Err }

// tailLines returns the last n non-empty lines of s.
func tailLines(s string, n int) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimRight(l, "\r"))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// ring keeps the last lines written to it.
type ring struct {
	lines []string
	max   int
}

func (r *ring) add(line string) {
	r.lines = append(r.lines, line)
	if len(r.lines) > r.max {
		r.lines = r.lines[len(r.lines)-r.max:]
	}
}
