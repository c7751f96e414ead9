package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
)

// TestLeaseOutOnlyWhenTheHolderWasSilenced: a pause of the whole leader (or of its
// leader-election sidecar) longer than the TTL lets its lease run out, and the explanation
// says so; a pause of the application alone does not (its sidecar kept renewing).
func TestLeaseOutOnlyWhenTheHolderWasSilenced(t *testing.T) {
	ttl := 2 * time.Second
	for _, tc := range []struct {
		spec string
		want bool
	}{
		{"pause:target=leader,for=3xTTL", true},
		{"pause:target=leader,process=all,for=3xTTL", true},
		{"pause:target=leader,process=sidecar,for=3xTTL", true},
		{"pause:target=leader,process=app,on=step:poll-leader,for=3xTTL", false},
	} {
		r := &checkers.Results{}
		r.Params.LeaseTTL = checkers.Duration(ttl)
		f := &checkers.FaultWindow{ID: 1, Kind: "pause", Targets: []string{"c1"}, Spec: tc.spec,
			StartT: int64(time.Second), EndT: int64(7 * time.Second)}
		x := &story{r: r, fault: f}
		x.leaseOut("c1")
		got := false
		for _, s := range x.steps {
			got = got || strings.Contains(s.Text, "had run out")
		}
		if got != tc.want {
			t.Errorf("%s: lease-out step %v, want %v (steps %+v)", tc.spec, got, tc.want, x.steps)
		}
	}
}
