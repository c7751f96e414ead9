package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockRefresh bounds how stale the offset may be: the harness rewrites the file while a run
// goes, and a lease decision must see a bump within a few ms.
const clockRefresh = 2 * time.Millisecond

// Clock is the candidate's clock for lease decisions: real time plus the offset (signed ns)
// in the harness's control file. A missing file means offset 0.
type Clock struct {
	path    string
	onError func(error) // told once per distinct bad content

	mu      sync.Mutex
	offset  time.Duration
	readAt  time.Time // monotonic reading of the last file read
	lastErr string
}

// NewClock returns a clock that reads its offset from path.
func NewClock(path string, onError func(error)) *Clock {
	if onError == nil {
		onError = func(error) {}
	}
	return &Clock{path: path, onError: onError}
}

// Now returns the candidate's current time.
func (c *Clock) Now() time.Time { return time.Now().Add(c.Offset()) }

// Offset returns the current offset, re-reading the file at most every clockRefresh.
func (c *Clock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readAt.IsZero() && time.Since(c.readAt) < clockRefresh {
		return c.offset
	}
	c.readAt = time.Now()
	off, err := readOffset(c.path)
	if err != nil {
		// Keep the last good offset: a half-written file must not jump the clock to 0.
		if msg := err.Error(); msg != c.lastErr {
			c.lastErr = msg
			c.onError(err)
		}
		return c.offset
	}
	c.lastErr = ""
	c.offset = off
	return off
}

func readOffset(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("clock offset file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("clock offset file %s holds %.40q, want a signed integer of ns (e.g. -1500000000)", path, s)
	}
	return time.Duration(n), nil
}
