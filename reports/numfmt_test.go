package reports

import (
	"strings"
	"testing"
	"time"
)

func TestFmtDurRoundsToThreeDigits(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{266666666, "267ms"}, {2 * time.Second, "2s"}, {2274 * time.Millisecond, "2.27s"}, {4010 * time.Millisecond, "4.01s"},
		{12345 * time.Millisecond, "12.3s"}, {30 * time.Millisecond, "30ms"}, {45650 * time.Microsecond, "45.6ms"},
		{1500 * time.Microsecond, "1.5ms"}, {820 * time.Microsecond, "820µs"}, {999999 * time.Microsecond, "1s"},
		{83456 * time.Millisecond, "1m23.5s"}, {0, "0ns"}, {-1, "—"},
	} {
		if got := fmtDur(int64(c.d)); got != c.want {
			t.Errorf("fmtDur(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestStampsKeepMilliseconds(t *testing.T) {
	if got := rel(int64(14010123*time.Microsecond), int64(10*time.Second)); got != "+4.010s" {
		t.Errorf("rel = %q, want +4.010s", got)
	}
	if got := relTo(int64(9*time.Second), int64(10*time.Second)); got != "-1.000s" {
		t.Errorf("relTo = %q, want -1.000s", got)
	}
	if got := fmtStamp(int64(349400 * time.Microsecond)); got != "349ms" {
		t.Errorf("fmtStamp = %q, want 349ms", got)
	}
}

func TestDurationsInTextAreRounded(t *testing.T) {
	in := "stale write at +7.010123s: lease 266.666666ms, took 1m2.345678s; w12.3456s stays, token 2.5s stays"
	want := "stale write at +7.010s: lease 267ms, took 1m2.3s; w12.3456s stays, token 2.5s stays"
	if got := roundDurationsIn(in); got != want {
		t.Errorf("roundDurationsIn:\n got %q\nwant %q", got, want)
	}
	if got := fmtDurText("266.666666ms"); got != "267ms" {
		t.Errorf("fmtDurText = %q", got)
	}
	if got := fmtDurText("3xTTL"); got != "3xTTL" {
		t.Errorf("fmtDurText changed a non-duration: %q", got)
	}
}

// The run facts show the recipe's timing rounded: config.json holds "666.666666ms".
func TestReportRoundsRecipeTiming(t *testing.T) {
	page, _, _ := renderFixture(t, defaultFixture())
	mustContain(t, page, "2s, renew 667ms, retry 500ms")
	if strings.Contains(page, "666.666") {
		t.Error("the report prints an unrounded duration")
	}
}
