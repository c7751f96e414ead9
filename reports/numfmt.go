package reports

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The pages print two kinds of time: durations (a TTL, a failover, a window's length), read
// for their size, so three significant digits and no trailing zeros ("267ms", "2.27s", "2s");
// and instants relative to a zero (a run's start, a fault's start), read against each other,
// so always to the millisecond ("+4.010s"). Every time in report.html and index.html goes
// through fmtDur or fmtStamp; strings that already hold a duration (config.json's timings,
// the checkers' messages) are reformatted by fmtDurText and roundDurationsIn.

// fmtDur renders a duration to three significant digits: 1m23.4s, 12.3s, 2.27s, 267ms, 45.6ms, 820µs.
func fmtDur(ns int64) string {
	if ns < 0 {
		return "—"
	}
	d := time.Duration(ns)
	switch {
	case d >= time.Hour:
		return d.Round(time.Second).String()
	case d >= time.Minute:
		return d.Round(100 * time.Millisecond).String()
	// A value that rounds up to 1000 of a unit is printed in the next one ("1s", not "1000ms").
	case d >= 999500*time.Microsecond:
		return sig3(d.Seconds()) + "s"
	case d >= 999500*time.Nanosecond:
		return sig3(float64(d)/float64(time.Millisecond)) + "ms"
	case d >= time.Microsecond:
		return sig3(float64(d)/float64(time.Microsecond)) + "µs"
	}
	return fmt.Sprintf("%dns", d)
}

// sig3 prints x (1 <= x < 1000) to three significant digits without trailing zeros.
func sig3(x float64) string {
	decimals := 2
	switch {
	case x >= 99.95:
		decimals = 0
	case x >= 9.995:
		decimals = 1
	}
	s := strconv.FormatFloat(x, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// fmtStamp renders the distance of an instant from its zero to the millisecond: 4.010s,
// 349ms, 1m2.345s. Callers put the sign in front.
func fmtStamp(ns int64) string {
	if ns < 0 {
		return "—"
	}
	d := time.Duration(ns)
	switch {
	case d >= time.Minute:
		return d.Round(time.Millisecond).String()
	case d >= time.Second:
		return fmt.Sprintf("%.3fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%dms", int64(math.Round(float64(d)/float64(time.Millisecond))))
	case d >= time.Microsecond:
		return fmt.Sprintf("%dµs", d/time.Microsecond)
	}
	return fmt.Sprintf("%dns", d)
}

// rel formats t relative to the run start, for titles and tables.
func rel(t, t0 int64) string {
	if t < t0 {
		return "-" + fmtStamp(t0-t)
	}
	return "+" + fmtStamp(t-t0)
}

// fmtDurText reformats a duration written as Go text ("266.666666ms", from config.json)
// with fmtDur; anything that does not parse as one is returned as it is.
func fmtDurText(s string) string {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return s
	}
	return fmtDur(int64(d))
}

// durationLiteral matches a Go duration with more digits than a page needs: the checkers
// write messages with times to the microsecond ("+7.010123s", "266.666666ms").
var durationLiteral = regexp.MustCompile(`(^|[^\w.])([+-]?)((?:\d+h)?(?:\d+m)?\d+\.\d{4,}(?:s|ms|µs|us))\b`)

// roundDurationsIn rewrites over-precise durations inside free text: a signed one is an
// instant (fmtStamp), an unsigned one a duration (fmtDur).
func roundDurationsIn(text string) string {
	return durationLiteral.ReplaceAllStringFunc(text, func(m string) string {
		sub := durationLiteral.FindStringSubmatch(m)
		d, err := time.ParseDuration(sub[3])
		if err != nil {
			return m
		}
		if sub[2] != "" {
			return sub[1] + sub[2] + fmtStamp(int64(d))
		}
		return sub[1] + fmtDur(int64(d))
	})
}
