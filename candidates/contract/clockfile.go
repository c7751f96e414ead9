package contract

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ClockSetting is the content of the clock-offset control file (docs/candidates.md §5):
// either one signed integer of ns, the offset (the original form), or three fields
// "OFFSET RATE SINCE": at wall-clock time SINCE (Unix ns) the candidate's clock was
// real time + OFFSET, and from then on it runs RATE times as fast as real time.
type ClockSetting struct {
	Offset time.Duration
	Rate   float64 // 0 or 1: real speed
	Since  int64   // Unix ns where the rate starts; meaningful when Rate is set
}

// OffsetAt is the offset of the candidate's clock from real time at the wall-clock time
// now (Unix ns): Offset + (Rate-1)·(now-Since).
func (c ClockSetting) OffsetAt(now int64) time.Duration {
	if c.Rate == 0 || c.Rate == 1 {
		return c.Offset
	}
	return c.Offset + time.Duration((c.Rate-1)*float64(now-c.Since))
}

// String renders the file content: one number when the rate is real speed.
func (c ClockSetting) String() string {
	if c.Rate == 0 || c.Rate == 1 {
		return strconv.FormatInt(int64(c.Offset), 10)
	}
	return fmt.Sprintf("%d %s %d", int64(c.Offset), strconv.FormatFloat(c.Rate, 'g', -1, 64), c.Since)
}

// ParseClockSetting reads the file content; empty means offset 0.
func ParseClockSetting(s string) (ClockSetting, error) {
	f := strings.Fields(s)
	switch len(f) {
	case 0:
		return ClockSetting{}, nil
	case 1, 3:
	default:
		return ClockSetting{}, fmt.Errorf("clock file holds %.60q: want OFFSET (signed ns, e.g. -1500000000) or OFFSET RATE SINCE (e.g. 0 2 1764000000000000000)", s)
	}
	off, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return ClockSetting{}, fmt.Errorf("clock file holds %.60q: OFFSET must be a signed integer of ns (e.g. -1500000000)", s)
	}
	c := ClockSetting{Offset: time.Duration(off)}
	if len(f) == 1 {
		return c, nil
	}
	rate, err := strconv.ParseFloat(f[1], 64)
	if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
		return ClockSetting{}, fmt.Errorf("clock file holds %.60q: RATE must be a number > 0 (2 = twice real speed)", s)
	}
	since, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return ClockSetting{}, fmt.Errorf("clock file holds %.60q: SINCE must be Unix time in ns", s)
	}
	c.Rate, c.Since = rate, since
	return c, nil
}
