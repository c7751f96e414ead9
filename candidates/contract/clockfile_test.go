package contract

import (
	"strings"
	"testing"
	"time"
)

func TestClockSetting(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ClockSetting
	}{
		{"", ClockSetting{}},
		{" -1500000000\n", ClockSetting{Offset: -1500 * time.Millisecond, Mono: -1500 * time.Millisecond}},
		{"0 2 1000", ClockSetting{Rate: 2, Since: 1000}},
		{"5 0.5 7\n", ClockSetting{Offset: 5, Rate: 0.5, Since: 7, Mono: 5}},
		{"5 0.5 7 -9", ClockSetting{Offset: 5, Rate: 0.5, Since: 7, Mono: -9}},
		{"0 1 7 -9", ClockSetting{Rate: 1, Since: 7, Mono: -9}},
	} {
		got, err := ParseClockSetting(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if again, err := ParseClockSetting(got.String()); err != nil || again != got {
			t.Errorf("%q does not round-trip through %q: %+v %v", c.in, got.String(), again, err)
		}
	}
	for _, c := range []struct{ in, wantInErr string }{
		{"1.5", "OFFSET must be a signed integer of ns"},
		{"0 2", "want OFFSET (signed ns"},
		{"0 -2 5", "RATE must be a number > 0"},
		{"0 0 5", "RATE must be a number > 0"},
		{"0 NaN 5", "RATE must be a number > 0"},
		{"0 2 x", "SINCE must be Unix time in ns"},
		{"0 2 5 1.5", "MONO must be a signed integer of ns"},
		{"0 2 5 6 7", "want OFFSET (signed ns"},
	} {
		if _, err := ParseClockSetting(c.in); err == nil || !strings.Contains(err.Error(), c.wantInErr) {
			t.Errorf("%q: error %v, want it to contain %q", c.in, err, c.wantInErr)
		}
	}
	s := ClockSetting{Offset: time.Second, Rate: 3, Since: 10_000, Mono: -time.Second}
	if got := s.WallOffsetAt(10_000 + 1000); got != time.Second+2000 {
		t.Errorf("WallOffsetAt: %v", got)
	}
	if got := s.MonoOffsetAt(10_000 + 1000); got != -time.Second+2000 {
		t.Errorf("MonoOffsetAt: %v", got)
	}
}

// The heal of a rate fault: the wall line steps back by the drift, the monotonic line reads
// the same just before and just after the heal and runs at real speed from there.
func TestClockRateHeal(t *testing.T) {
	const since, heal, later = int64(1_000_000_000), int64(7_000_000_000), int64(9_000_000_000)
	for _, rate := range []float64{0.5, 2} {
		before := ClockSetting{Offset: 3 * time.Second, Mono: time.Second}.WithRate(rate, since)
		after := before.RateHealed(heal)
		drift := time.Duration((rate - 1) * float64(heal-since))
		if got := after.WallOffsetAt(heal); got != 3*time.Second {
			t.Errorf("rate %v: wall offset %v right after the heal, want the 3s it had before the rate (the drift %v stepped back)", rate, got, drift)
		}
		if b, a := before.MonoOffsetAt(heal), after.MonoOffsetAt(heal); b != a || a != time.Second+drift {
			t.Errorf("rate %v: monotonic offset %v before the heal, %v after: the monotonic line jumped (want both %v)", rate, b, a, time.Second+drift)
		}
		if got := after.MonoOffsetAt(later); got != time.Second+drift {
			t.Errorf("rate %v: monotonic offset %v 2s after the heal, want %v (real speed)", rate, got, time.Second+drift)
		}
		again, err := ParseClockSetting(after.String())
		if err != nil || again.WallOffsetAt(later) != after.WallOffsetAt(later) || again.MonoOffsetAt(later) != after.MonoOffsetAt(later) {
			t.Errorf("rate %v: healed setting %q reads back as %+v, %v", rate, after.String(), again, err)
		}
		if n := len(strings.Fields(after.String())); n != 4 {
			t.Errorf("rate %v: healed setting written as %q, want the four-field form", rate, after.String())
		}
		if reset := after.WallReset(later); reset.WallOffsetAt(later) != 0 || reset.MonoOffsetAt(later) != after.MonoOffsetAt(later) {
			t.Errorf("rate %v: WallReset %+v moved the monotonic line or left the wall off", rate, reset)
		}
	}
	// A bump steps both lines and its heal steps both back: the one-number form again.
	b := ClockSetting{}.Bumped(-5 * time.Second)
	if b.String() != "-5000000000" || b.Bumped(5*time.Second).String() != "0" {
		t.Errorf("bump and its heal written as %q, %q; want -5000000000, 0", b.String(), b.Bumped(5*time.Second).String())
	}
}
