package lint

import (
	"context"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

const ms = int64(1e6)

// run builds a history (seq in slice order), checks it with the real checkers and lints it.
func run(t *testing.T, evs []history.Event) []Problem {
	t.Helper()
	for i := range evs {
		evs[i].V, evs[i].Seq = history.Version, int64(i+1)
		if evs[i].Source == "" {
			evs[i].Source = history.SourceOf(evs[i].Kind)
		}
	}
	res, err := checkers.Check(context.Background(), evs, checkers.Params{PorcupineTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	return Check(evs, res, Options{})
}

func codes(ps []Problem) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Rule+":"+p.Code)
	}
	return strings.Join(out, " ")
}

// good is a correct run: c1 leads and writes, SIGTERM hands over to c2, teardown.
func good() []history.Event {
	zero := 0
	return []history.Event{
		{T: 1 * ms, Kind: history.KindRunStart},
		{T: 2 * ms, Kind: history.KindProcessStart, Node: "c1"},
		{T: 2 * ms, Kind: history.KindProcessStart, Node: "c2"},
		{T: 10 * ms, Kind: history.KindCampaigning, Node: "c1"},
		{T: 11 * ms, Kind: history.KindCampaigning, Node: "c2"},
		{T: 20 * ms, Kind: history.KindElected, Node: "c1", Token: 5},
		{T: 25 * ms, Kind: history.KindDecision, Node: "c1", Token: 5, WriteID: "w1", Result: "accepted", Max: 0},
		{T: 26 * ms, Kind: history.KindWrite, Node: "c1", Token: 5, WriteID: "w1", CallT: 24 * ms, Result: "accepted"},
		{T: 100 * ms, Kind: history.KindSignal, Node: "c1", Signal: "SIGTERM", Reason: "handoff"},
		{T: 110 * ms, Kind: history.KindSteppedDown, Node: "c1", Reason: "sigterm"},
		{T: 150 * ms, Kind: history.KindProcessExit, Node: "c1", Exit: &zero},
		{T: 160 * ms, Kind: history.KindElected, Node: "c2", Token: 6},
		{T: 165 * ms, Kind: history.KindDecision, Node: "c2", Token: 6, WriteID: "w2", Result: "accepted", Max: 5},
		{T: 166 * ms, Kind: history.KindWrite, Node: "c2", Token: 6, WriteID: "w2", CallT: 164 * ms, Result: "accepted"},
		{T: 200 * ms, Kind: history.KindSignal, Node: "c2", Signal: "SIGTERM", Reason: "teardown"},
		{T: 210 * ms, Kind: history.KindSteppedDown, Node: "c2", Reason: "sigterm"},
		{T: 250 * ms, Kind: history.KindProcessExit, Node: "c2", Exit: &zero},
		{T: 300 * ms, Kind: history.KindRunEnd},
	}
}

func TestGoodRunHasNoProblems(t *testing.T) {
	if ps := run(t, good()); len(ps) != 0 {
		t.Fatalf("problems in a correct run: %s\n%s", codes(ps), Format(ps))
	}
}

func TestEachMistakeIsNamedWithItsRule(t *testing.T) {
	cases := []struct {
		name string
		mod  func([]history.Event) []history.Event
		want string
	}{
		{"time backwards", func(e []history.Event) []history.Event {
			e[7].T, e[7].CallT = 19*ms, 18*ms // c1's write stamped before its elected (printed after it)
			return e
		}, "R2:time-backwards"},
		{"write outside tenure", func(e []history.Event) []history.Event {
			e[7].CallT = 15 * ms // sent before elected
			return e
		}, "R6:write-outside-tenure"},
		{"empty reason", func(e []history.Event) []history.Event {
			e[9] = history.Event{T: 110 * ms, Kind: history.KindContractViolation, Node: "c1", Reason: `"reason" must not be empty`, Line: `{"kind":"stepped-down","reason":""}`}
			return e
		}, "R3:empty-field"},
		{"unknown field", func(e []history.Event) []history.Event {
			e[3] = history.Event{T: 10 * ms, Kind: history.KindContractViolation, Node: "c1", Reason: `field "leader" does not belong to a campaigning event`}
			return e
		}, "R4:unknown-field"},
		{"unknown field, parser's wording naming the token field", func(e []history.Event) []history.Event {
			e[3] = history.Event{T: 10 * ms, Kind: history.KindContractViolation, Node: "c1",
				Reason: `unknown field "leader" (contract v1 fields: t, kind, node, token, write_id, call_t, result, reason, clock)`}
			return e
		}, "R4:unknown-field"},
		{"bad token", func(e []history.Event) []history.Event {
			e[5] = history.Event{T: 20 * ms, Kind: history.KindContractViolation, Node: "c1", Reason: `"token" must be >= 1, got 0`}
			return e
		}, "R8:bad-token"},
		{"ignores SIGTERM", func(e []history.Event) []history.Event {
			e[10].T = 6000 * ms
			for i := 11; i < len(e); i++ {
				e[i].T += 6000 * ms
				e[i].CallT += 6000 * ms * min(e[i].CallT, 1)
			}
			return e
		}, "R11:ignores-sigterm"},
		{"elected after SIGTERM", func(e []history.Event) []history.Event {
			// c2 gets SIGTERM at teardown while waiting, then prints elected.
			e = append(e[:14:14], history.Event{T: 200 * ms, Kind: history.KindSignal, Node: "c2", Signal: "SIGTERM"})
			e[11].T = 160 * ms
			return append(e, history.Event{T: 205 * ms, Kind: history.KindElected, Node: "c2", Token: 7},
				history.Event{T: 210 * ms, Kind: history.KindSteppedDown, Node: "c2", Reason: "sigterm"},
				history.Event{T: 300 * ms, Kind: history.KindRunEnd})
		}, "R10:elected-after-sigterm"},
		{"no campaigning", func(e []history.Event) []history.Event {
			return append(e[:4:4], e[5:]...) // c2's campaigning gone: c1's... drop c2's instead
		}, "R9:no-campaigning"},
		{"late events", func(e []history.Event) []history.Event {
			// c2's write arrives after a harness event 3 s later than its own t.
			w := e[13]
			e = append(e[:13:13], history.Event{T: 3200 * ms, Kind: history.KindPhase, Phase: "recovery"}, w)
			return append(e, history.Event{T: 3300 * ms, Kind: history.KindRunEnd})
		}, "R1:late-events"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := run(t, tc.mod(good()))
			if !strings.Contains(codes(ps), tc.want) {
				t.Fatalf("got %q, want %s\n%s", codes(ps), tc.want, Format(ps))
			}
			for _, p := range ps {
				if p.Fix == "" || p.What == "" {
					t.Errorf("%s has no what or fix", p.Code)
				}
			}
		})
	}
}

func TestSilentCandidate(t *testing.T) {
	evs := []history.Event{
		{T: 1 * ms, Kind: history.KindRunStart},
		{T: 2 * ms, Kind: history.KindProcessStart, Node: "c1"},
		{T: 300 * ms, Kind: history.KindRunEnd},
	}
	got := codes(run(t, evs))
	for _, want := range []string{"R9:silent", "R8:never-elected"} {
		if !strings.Contains(got, want) {
			t.Errorf("got %q, want %s", got, want)
		}
	}
}

// A non-zero exit after SIGTERM is the candidate's when it had campaigned since its start;
// one signalled while it starts (a handoff's restart meeting the teardown) exits by the
// signal's default action, before its handler exists (a Go program as PID 1: code 2).
func TestSigtermExitCodeOnlyAfterCampaigning(t *testing.T) {
	two := 2
	base := good()[:11] // c1 handed over and exited 0
	restart := []history.Event{
		{T: 170 * ms, Kind: history.KindProcessStart, Node: "c1"},
		{T: 171 * ms, Kind: history.KindSignal, Node: "c1", Signal: "SIGTERM", Reason: "teardown"},
		{T: 172 * ms, Kind: history.KindProcessExit, Node: "c1", Exit: &two},
	}
	evs := append(append(append([]history.Event{}, base...), good()[11:14]...), restart...)
	if got := codes(run(t, evs)); strings.Contains(got, "sigterm-exit-code") {
		t.Errorf("got %q: a process signalled before it campaigned was blamed for its exit code", got)
	}
	campaigned := append(append([]history.Event{}, base...), good()[11:14]...)
	campaigned = append(campaigned, restart[0],
		history.Event{T: 170*ms + 500, Kind: history.KindCampaigning, Node: "c1"}, restart[1], restart[2])
	if got := codes(run(t, campaigned)); !strings.Contains(got, "R11:sigterm-exit-code") {
		t.Errorf("got %q, want R11:sigterm-exit-code for a campaigning process that exited 2 after SIGTERM", got)
	}
}
