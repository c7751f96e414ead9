package contract

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ClockSetting is the content of the clock file (docs/candidates.md §5). A candidate's clock
// has two lines: the wall line (real CLOCK_REALTIME + a wall offset), for points in time that
// leave the process, and the monotonic line (real CLOCK_MONOTONIC + a monotonic offset), for
// intervals measured inside it. The file has one of three forms:
//
//	OFFSET                  both lines off by OFFSET ns, at real speed (the original form)
//	OFFSET RATE SINCE       at wall-clock time SINCE (Unix ns) both lines were off by OFFSET;
//	                        from then on they run RATE times as fast as real time
//	OFFSET RATE SINCE MONO  as above, but the monotonic line was off by MONO at SINCE
//
// The four-field form is what a rate fault's heal leaves: the wall line is stepped back to
// real time + OFFSET (as an NTP correction would) while the monotonic line keeps the drift it
// gained and goes on at real speed, without a jump.
type ClockSetting struct {
	Offset time.Duration // wall line's offset at Since (at any time when the rate is real)
	Rate   float64       // 0 or 1: real speed
	Since  int64         // Unix ns where the rate starts; meaningful when Rate is set
	Mono   time.Duration // monotonic line's offset at Since (at any time when the rate is real)
}

// RealSpeed reports whether the setting runs at real speed (no rate fault in effect).
func (c ClockSetting) RealSpeed() bool { return c.Rate == 0 || c.Rate == 1 }

// drift is how far a line running at Rate has moved from real time between Since and now.
func (c ClockSetting) drift(now int64) time.Duration {
	if c.RealSpeed() {
		return 0
	}
	return time.Duration((c.Rate - 1) * float64(now-c.Since))
}

// WallOffsetAt is the wall line's offset from real time at the wall-clock time now (Unix
// ns): Offset + (Rate-1)·(now-Since).
func (c ClockSetting) WallOffsetAt(now int64) time.Duration { return c.Offset + c.drift(now) }

// MonoOffsetAt is the monotonic line's offset from real monotonic time at the wall-clock time
// now (Unix ns): Mono + (Rate-1)·(now-Since).
func (c ClockSetting) MonoOffsetAt(now int64) time.Duration { return c.Mono + c.drift(now) }

// Bumped steps both lines by delta (a clock bump's start, or with -delta its heal).
func (c ClockSetting) Bumped(delta time.Duration) ClockSetting {
	c.Offset += delta
	c.Mono += delta
	return c
}

// WithRate makes both lines run at rate from now on, each continuing from where it is.
func (c ClockSetting) WithRate(rate float64, now int64) ClockSetting {
	return ClockSetting{Offset: c.WallOffsetAt(now), Mono: c.MonoOffsetAt(now), Rate: rate, Since: now}
}

// RateHealed ends a rate at now: the wall line steps back by the drift the rate gained (to
// Offset, where it was when the rate began, plus any bump since), the monotonic line keeps
// its reading and runs at real speed from here: it never jumps.
func (c ClockSetting) RateHealed(now int64) ClockSetting {
	return ClockSetting{Offset: c.Offset, Mono: c.MonoOffsetAt(now), Since: now}
}

// WallReset puts the wall line back to real time at real speed and leaves the monotonic line
// where it is (the final sweep after every fault healed or failed to).
func (c ClockSetting) WallReset(now int64) ClockSetting {
	return ClockSetting{Mono: c.MonoOffsetAt(now), Since: now}
}

// String renders the file content in the shortest form that says it: one number when both
// lines agree at real speed, three fields when they agree, four otherwise.
func (c ClockSetting) String() string {
	rate := c.Rate
	if c.RealSpeed() {
		if c.Mono == c.Offset {
			return strconv.FormatInt(int64(c.Offset), 10)
		}
		rate = 1
	}
	s := fmt.Sprintf("%d %s %d", int64(c.Offset), strconv.FormatFloat(rate, 'g', -1, 64), c.Since)
	if c.Mono != c.Offset {
		s += " " + strconv.FormatInt(int64(c.Mono), 10)
	}
	return s
}

// ParseClockSetting reads the file content; empty means offset 0.
func ParseClockSetting(s string) (ClockSetting, error) {
	f := strings.Fields(s)
	switch len(f) {
	case 0:
		return ClockSetting{}, nil
	case 1, 3, 4:
	default:
		return ClockSetting{}, fmt.Errorf("clock file holds %.60q: want OFFSET (signed ns, e.g. -1500000000), OFFSET RATE SINCE (e.g. 0 2 1764000000000000000) or OFFSET RATE SINCE MONO", s)
	}
	off, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return ClockSetting{}, fmt.Errorf("clock file holds %.60q: OFFSET must be a signed integer of ns (e.g. -1500000000)", s)
	}
	c := ClockSetting{Offset: time.Duration(off), Mono: time.Duration(off)}
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
	if len(f) == 4 {
		mono, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return ClockSetting{}, fmt.Errorf("clock file holds %.60q: MONO must be a signed integer of ns", s)
		}
		c.Mono = time.Duration(mono)
	}
	return c, nil
}
