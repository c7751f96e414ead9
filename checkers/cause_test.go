package checkers

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// withFaults adds fault windows (times in ms) to a hand-made history, in time order.
func withFaults(evs []history.Event, faults ...history.Event) []history.Event {
	out := slices.Clone(evs)
	for i, f := range faults {
		start := history.Event{V: history.Version, T: f.T, Source: history.SourceNemesis, Kind: history.KindFaultStart,
			FaultID: i + 1, Fault: f.Fault, Targets: f.Targets, Spec: f.Spec}
		start.T *= int64(time.Millisecond)
		out = append(out, start)
		if f.Count > 0 { // Count carries the heal time in ms here
			end := start
			end.Kind, end.T, end.Spec = history.KindFaultEnd, int64(f.Count)*int64(time.Millisecond), ""
			out = append(out, end)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
	for i := range out {
		out[i].Seq = int64(i + 1)
	}
	return out
}

func fault(kind, spec string, fromMs, toMs int64, targets ...string) history.Event {
	return history.Event{T: fromMs, Count: int(toMs), Fault: kind, Spec: spec, Targets: targets}
}

func causeOf(t *testing.T, store string, evs []history.Event) Cause {
	t.Helper()
	res, err := Check(context.Background(), evs, Params{Store: store, LeaseTTL: Duration(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Invalid || res.Cause == nil {
		t.Fatalf("want an invalid run with a cause, got %s (cause %v): %+v", res.Verdict, res.Cause, res.Reasons)
	}
	return *res.Cause
}

// TestCauseTellsTheStoreFromTheCandidate: the same violation is the store's amnesia when an
// in-memory store crashed and came back before it, and the candidate's own logic when the
// store keeps its data, when the crash came after the violation, or when a candidate crashed.
func TestCauseTellsTheStoreFromTheCandidate(t *testing.T) {
	stale := lateHistory([][2]int64{{1500, 1600}}, false)
	for _, tc := range []struct {
		name, store string
		faults      []history.Event
		want        string
		also        []string
		says        string
		unsaid      string
	}{
		{"redis crashed and back before", "redis", []history.Event{fault("kill", "kill:target=all-store,for=100ms", 500, 600, "redis")}, CauseStoreAmnesia, nil, "redis crashed", ""},
		{"a durable store crashed", "etcd", []history.Event{fault("kill", "kill:target=store-node", 500, 600, "etcd-2")}, CauseOwnLogic, nil, "no store crash", "no fault in effect"},
		{"redis crashed after the violation", "redis", []history.Event{fault("kill", "kill:target=all-store", 3500, 3600, "redis")}, CauseOwnLogic, nil, "first violation", ""},
		{"no fault before the violation", "zookeeper", nil, CauseOwnLogic, nil, "nor had any fault started: the system broke with no fault in effect", ""},
		{"redis still down at the violation", "redis", []history.Event{fault("kill", "kill:target=all-store", 500, 3600, "redis")}, CauseOwnLogic, nil, "", ""},
		{"a candidate crashed on redis", "redis", []history.Event{fault("kill", "kill:target=leader", 500, 600, "c1")}, CauseOwnLogic, nil, "", ""},
		{"a clock stepped", "etcd", []history.Event{fault("clock", "clock:target=leader,delta=-3xTTL", 500, 900, "c1")}, CauseClockStep, nil, "stepped", ""},
		{"a clock ran fast", "etcd", []history.Event{fault("clock", "clock:target=leader,op=rate,rate=2", 500, 900, "c1")}, CauseOwnLogic, nil, "", ""},
		{"an eviction and an amnesia", "redis", []history.Event{fault("evict", "evict", 400, 0, "c1"), fault("kill", "kill:target=all-store", 500, 600, "redis")}, CauseStoreAmnesia, []string{CauseEviction}, "", ""},
		{"a lying fence", "none", []history.Event{fault("fence-lying", "fence-lying", 200, 3000)}, CauseFenceLie, nil, "lied", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := causeOf(t, tc.store, withFaults(stale, tc.faults...))
			if c.Class != tc.want || !slices.Equal(c.Also, tc.also) {
				t.Fatalf("cause %+v, want class %s also %v", c, tc.want, tc.also)
			}
			if !strings.Contains(c.String(), tc.says) {
				t.Errorf("cause %q does not say %q", c, tc.says)
			}
			if tc.unsaid != "" && strings.Contains(c.String(), tc.unsaid) {
				t.Errorf("cause %q says %q", c, tc.unsaid)
			}
			if !strings.HasPrefix(c.Key, c.Class+"|") || !strings.Contains(c.Key, "stale-write-accepted") {
				t.Errorf("key %q: want the class and the reason codes", c.Key)
			}
		})
	}
}

// TestCauseKeySeparatesReasons: two finds of one class with different reasons are distinct.
func TestCauseKeySeparatesReasons(t *testing.T) {
	a := causeOf(t, "etcd", lateHistory([][2]int64{{1500, 1600}}, false))
	b := causeOf(t, "etcd", lateHistory(nil, true))
	if a.Class != CauseOwnLogic || b.Class != CauseOwnLogic || a.Key == b.Key {
		t.Fatalf("keys %q and %q: want two own-logic keys that differ by their reasons", a.Key, b.Key)
	}
}

// TestOnlyInvalidRunsHaveACause: a valid run has none.
func TestOnlyInvalidRunsHaveACause(t *testing.T) {
	res, err := Check(context.Background(), lateHistory(nil, false), Params{Store: "redis", LeaseTTL: Duration(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict == Invalid || res.Cause != nil {
		t.Fatalf("verdict %s cause %v: a run that is not invalid has no cause", res.Verdict, res.Cause)
	}
}
