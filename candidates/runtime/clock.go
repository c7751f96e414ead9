package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
)

// clockRefresh bounds how stale the offset may be: the harness rewrites the file while a run
// goes, and a lease decision must see a bump within a few ms.
const clockRefresh = 2 * time.Millisecond

// Clock is the candidate's clock for lease decisions: real time plus the offset in the
// harness's control file, which may also make it run at a rate (contract.ClockSetting). A
// missing file means offset 0.
type Clock struct {
	path    string
	onError func(error) // told once per distinct bad content

	mu      sync.Mutex
	setting contract.ClockSetting
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
func (c *Clock) Now() time.Time {
	now := time.Now()
	return now.Add(c.current().OffsetAt(now.UnixNano()))
}

// Offset returns the current offset from real time (it changes while a rate is set),
// re-reading the file at most every clockRefresh.
func (c *Clock) Offset() time.Duration {
	return c.current().OffsetAt(time.Now().UnixNano())
}

func (c *Clock) current() contract.ClockSetting {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readAt.IsZero() && time.Since(c.readAt) < clockRefresh {
		return c.setting
	}
	c.readAt = time.Now()
	st, err := readSetting(c.path)
	if err != nil {
		// Keep the last good setting: a half-written file must not jump the clock to 0.
		if msg := err.Error(); msg != c.lastErr {
			c.lastErr = msg
			c.onError(err)
		}
		return c.setting
	}
	c.lastErr = ""
	c.setting = st
	return st
}

func readSetting(path string) (contract.ClockSetting, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return contract.ClockSetting{}, nil
	}
	if err != nil {
		return contract.ClockSetting{}, fmt.Errorf("clock offset file: %w", err)
	}
	st, err := contract.ParseClockSetting(string(b))
	if err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}
