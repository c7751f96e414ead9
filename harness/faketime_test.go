package harness

import (
	"testing"

	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

func TestFaketimeOnlyForStoreClockFaults(t *testing.T) {
	parse := func(spec string) nemesis.Schedule {
		s, err := nemesis.Parse(spec)
		if err != nil {
			t.Fatalf("parse %q: %v", spec, err)
		}
		return s
	}
	cases := []struct {
		store, spec string
		want        bool
	}{
		{"postgres", "clock:op=bump,target=store-node,delta=1h,for=5s", true},
		{"zookeeper", "clock:op=bump,target=all-store,delta=1h,for=5s", true},
		{"postgres", "clock-bump-leader", false}, // candidates only: servers stay untouched
		{"postgres", "pause-leader", false},
		{"redis", "clock:op=bump,target=store-node,delta=1h,for=5s", false}, // unsupported store
	}
	for _, c := range cases {
		got := faketimeFor(c.store, parse(c.spec))
		if (got.env != nil) != c.want || (len(got.files) > 0) != c.want {
			t.Errorf("%s with %q: faketime %v, want %v", c.store, c.spec, got.env != nil, c.want)
		}
		if c.want && got.env["LD_PRELOAD"] == "" {
			t.Errorf("%s: no LD_PRELOAD in %v", c.store, got.env)
		}
	}
}
