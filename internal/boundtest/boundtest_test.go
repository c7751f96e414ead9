package boundtest

import (
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what Check said.
type recorder struct {
	testing.TB
	logs, errs []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Logf(f string, a ...any)   { r.logs = append(r.logs, f) }
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, f) }

func TestCheck(t *testing.T) {
	bound := time.Second
	for _, tc := range []struct {
		d                time.Duration
		wantLog, wantErr bool
	}{
		{bound, false, false},
		{2 * bound, testing.Short(), !testing.Short()},
		{Tolerance*bound + time.Millisecond, false, true},
	} {
		r := &recorder{TB: t}
		Check(r, "x", tc.d, bound)
		if got := len(r.logs) > 0; got != tc.wantLog {
			t.Errorf("%v: logged %v, want %v", tc.d, r.logs, tc.wantLog)
		}
		if got := len(r.errs) > 0; got != tc.wantErr {
			t.Errorf("%v: failed %v, want %v", tc.d, r.errs, tc.wantErr)
		}
		for _, l := range r.logs {
			if !strings.HasPrefix(l, "OVERRUN") {
				t.Errorf("log %q does not start with OVERRUN", l)
			}
		}
	}
	if w := Wait(bound); w != bound && w != Tolerance*bound {
		t.Errorf("Wait(%v) = %v", bound, w)
	}
}
