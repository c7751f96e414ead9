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

// clockRefresh bounds how stale the setting may be: the harness rewrites the file while a run
// goes, and a lease decision must see a bump within a few ms.
const clockRefresh = 2 * time.Millisecond

// Clock is the candidate's clock for lease decisions (docs/candidates.md §5): a wall line,
// real time plus the wall offset of the harness's clock file, and a monotonic line, real
// monotonic time plus the file's monotonic offset; either may run at a rate
// (contract.ClockSetting). A missing file means both offsets 0.
//
// Points in time that leave the process (a token, an expiry written to the store) come from
// Wall; intervals measured inside it (a local lease deadline) from Mono. The two differ after
// a rate fault heals: the wall line is stepped back, the monotonic line never jumps.
type Clock struct {
	path    string
	onError func(error) // told once per distinct bad content

	mu      sync.Mutex
	setting contract.ClockSetting
	readAt  time.Time // monotonic reading of the last file read
	lastErr string
}

// NewClock returns a clock that reads its setting from path.
func NewClock(path string, onError func(error)) *Clock {
	if onError == nil {
		onError = func(error) {}
	}
	return &Clock{path: path, onError: onError}
}

// Instant is a reading of the candidate's monotonic line. It means nothing outside the
// process: compare and subtract Instants only with each other.
type Instant struct{ ns time.Duration }

// monoOrigin is the zero of the process's Instants (a monotonic reading).
var monoOrigin = time.Now()

// RealMono is the real monotonic time as an Instant, for a recipe that does not honour the
// clock file (its deadlines are real ones).
func RealMono() Instant { return Instant{time.Since(monoOrigin)} }

// Add returns the Instant d later.
func (i Instant) Add(d time.Duration) Instant { return Instant{i.ns + d} }

// Sub returns i - u.
func (i Instant) Sub(u Instant) time.Duration { return i.ns - u.ns }

// Before reports whether i is earlier than u.
func (i Instant) Before(u Instant) bool { return i.ns < u.ns }

// After reports whether i is later than u.
func (i Instant) After(u Instant) bool { return i.ns > u.ns }

// Wall returns the candidate's wall-clock time, without a monotonic reading (so comparing
// two of them compares wall readings, as a reader of the stored value would).
func (c *Clock) Wall() time.Time {
	now := time.Now()
	return now.Add(c.current().WallOffsetAt(now.UnixNano())).Round(0)
}

// Mono returns the candidate's monotonic reading.
func (c *Clock) Mono() Instant {
	now := time.Now()
	return Instant{now.Sub(monoOrigin) + c.current().MonoOffsetAt(now.UnixNano())}
}

// WallOffset and MonoOffset return the lines' current offsets from real time (they change
// while a rate is set), re-reading the file at most every clockRefresh.
func (c *Clock) WallOffset() time.Duration {
	return c.current().WallOffsetAt(time.Now().UnixNano())
}

// MonoOffset: see WallOffset.
func (c *Clock) MonoOffset() time.Duration {
	return c.current().MonoOffsetAt(time.Now().UnixNano())
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
		return contract.ClockSetting{}, fmt.Errorf("clock file: %w", err)
	}
	st, err := contract.ParseClockSetting(string(b))
	if err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}
