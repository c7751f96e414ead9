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
		{" -1500000000\n", ClockSetting{Offset: -1500 * time.Millisecond}},
		{"0 2 1000", ClockSetting{Rate: 2, Since: 1000}},
		{"5 0.5 7\n", ClockSetting{Offset: 5, Rate: 0.5, Since: 7}},
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
	} {
		if _, err := ParseClockSetting(c.in); err == nil || !strings.Contains(err.Error(), c.wantInErr) {
			t.Errorf("%q: error %v, want it to contain %q", c.in, err, c.wantInErr)
		}
	}
	s := ClockSetting{Offset: time.Second, Rate: 3, Since: 10_000}
	if got := s.OffsetAt(10_000 + 1000); got != time.Second+2000 {
		t.Errorf("OffsetAt: %v", got)
	}
}
