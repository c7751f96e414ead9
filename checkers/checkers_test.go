package checkers

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// handoff: c1 leads with token 1, steps down at 1000 ms; c2 is elected at c2Start with token 2.
func handoff(c2Start int64) *hb {
	h := newHB()
	h.phase(2, history.PhaseWarmup).campaign(5, "c1").campaign(5, "c2")
	h.elected(10, "c1", 1).writes(10, 960, "c1", 1).stepDown(1000, "c1", "sigterm")
	h.elected(c2Start, "c2", 2).writes(1010, 2000, "c2", 2)
	return h.end(2100)
}

func TestCleanRunIsValid(t *testing.T) {
	r := check(t, handoff(1000), Params{})
	wantVerdict(t, r, Valid)
	if r.Tenures.Elections != 2 || r.Tenures.OverlapCount != 0 {
		t.Fatalf("tenures %+v", r.Tenures)
	}
	for _, m := range r.Porcupine.Models {
		if m.Result != PorcOK {
			t.Errorf("porcupine %s = %s, want ok", m.Model, m.Result)
		}
	}
	if r.Resource.Accepted == 0 || r.Resource.StaleAcceptedN != 0 {
		t.Fatalf("resource %+v", r.Resource)
	}
}

func TestOverlapZeroVsOneMillisecond(t *testing.T) {
	touch := check(t, handoff(1000), Params{Require: []string{RequireExclusive}})
	wantVerdict(t, touch, Valid)
	over := check(t, handoff(999), Params{})
	wantVerdict(t, over, Valid) // overlap alone is a finding by default
	if over.Tenures.OverlapCount != 1 || over.Tenures.OverlapMaxNs != ms {
		t.Fatalf("want one 1 ms overlap, got %+v", over.Tenures.Overlaps)
	}
	o := over.Tenures.Overlaps[0]
	if len(o.Members) != 2 || o.Members[0].Node != "c1" || o.Members[1].Node != "c2" || o.StartT != 999*ms {
		t.Fatalf("overlap members %+v", o)
	}
	if codes(over.Findings)["leader-overlap"] != 1 {
		t.Fatalf("findings %+v", over.Findings)
	}
	excl := check(t, handoff(999), Params{Require: []string{RequireExclusive}})
	wantVerdict(t, excl, Invalid)
	if codes(excl.Reasons)["leader-overlap"] != 1 {
		t.Fatalf("reasons %+v", excl.Reasons)
	}
	// The strict mutex model sees the same overlap; the lease model does not mind.
	if model(excl, ModelElectionStrict).Result != PorcIllegal || model(excl, ModelElectionLease).Result != PorcOK {
		t.Fatalf("election models: %+v", excl.Porcupine.Models)
	}
}

// pausedLeader: c1 is paused (or killed) at 500 ms, c2 is elected at 700 ms.
func pausedLeader(kind string) *hb {
	h := newHB()
	h.phase(2, history.PhaseWarmup).campaign(5, "c1").campaign(5, "c2")
	h.elected(10, "c1", 1).writes(10, 500, "c1", 1)
	h.phase(400, history.PhaseFaults).fault(500, 1, kind, "c1")
	if kind == "kill" { // the engine's exact die time (harness process-exit)
		h.add(history.Event{T: 500 * ms, Kind: history.KindProcessExit, Node: "c1"})
	}
	h.elected(700, "c2", 2).writes(700, 1200, "c2", 2)
	h.heal(1200, 1)
	if kind == "pause" {
		h.write(1210, "c1", 1) // the zombie wakes up and writes with its old token
		h.stepDown(1250, "c1", "lease-lost")
	}
	h.writes(1250, 1500, "c2", 2)
	h.phase(1300, history.PhaseHeal).phase(1400, history.PhaseRecovery).phase(1600, history.PhaseTeardown)
	return h.end(1700)
}

func TestTenureEndsAtDeathButNotAtPause(t *testing.T) {
	killed := check(t, pausedLeader("kill"), Params{Require: []string{RequireExclusive}})
	wantVerdict(t, killed, Valid)
	if tn := killed.Tenures.Tenures[0]; tn.EndReason != "process-exit" || tn.EndT != 500*ms {
		t.Fatalf("killed tenure %+v", tn)
	}
	paused := check(t, pausedLeader("pause"), Params{})
	wantVerdict(t, paused, Valid) // fenced: the zombie's write was rejected
	if paused.Tenures.OverlapCount != 1 || paused.Tenures.Overlaps[0].Duration != 550*ms {
		t.Fatalf("pause overlap %+v", paused.Tenures.Overlaps)
	}
	if paused.Resource.StaleRejectedN != 1 || codes(paused.Findings)["stale-write-rejected"] != 1 {
		t.Fatalf("stale rejected %+v", paused.Resource)
	}
	if model(paused, ModelElectionStrict).Result != PorcIllegal {
		t.Fatal("strict mutex should fail under a pause longer than the lease")
	}
	if paused.Verdict == Invalid {
		t.Fatal("strict mutex failing must not make the run invalid")
	}
	// No checker logic is keyed on a fault kind's name: a kill fault without an exit event
	// at its instant ends nothing; the tenure ends at the recorded exit.
	h := newHB()
	h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 300, "c1", 1)
	h.fault(400, 1, "kill", "c1")
	h.elected(420, "c2", 2).writes(420, 900, "c2", 2)
	h.add(history.Event{T: 520 * ms, Kind: history.KindProcessExit, Node: "c1"}).heal(600, 1).end(1000)
	if r := check(t, h, Params{}); r.Tenures.OverlapCount != 1 || r.Tenures.Overlaps[0].Duration != 100*ms || r.Tenures.Tenures[0].EndReason != "process-exit" {
		t.Fatalf("overlaps %+v tenure %+v", r.Tenures.Overlaps, r.Tenures.Tenures[0])
	}

	// SIGKILL signal and process-exit end a tenure too.
	for _, k := range []history.Kind{history.KindSignal, history.KindProcessExit} {
		h := newHB()
		h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 300, "c1", 1)
		h.add(history.Event{T: 400 * ms, Kind: k, Node: "c1", Signal: "SIGKILL"})
		h.elected(450, "c2", 2).writes(450, 900, "c2", 2).end(1000)
		r := check(t, h, Params{Require: []string{RequireExclusive}})
		wantVerdict(t, r, Valid)
	}
}

func TestStaleWriteRejectedVsAccepted(t *testing.T) {
	fenced := check(t, pausedLeader("pause"), Params{})
	wantVerdict(t, fenced, Valid)
	h := pausedLeader("pause")
	unf := newHB()
	unf.mode = ModeUnfenced
	// Replay the same scenario through an unfenced resource.
	for _, e := range h.ev[1:] {
		switch e.Kind {
		case history.KindDecision:
			res := unf.decide(e.T, e.Node, e.Token, e.WriteID)
			_ = res
		case history.KindWrite:
			e.Result = history.ResultAccepted
			unf.add(e)
		default:
			unf.add(e)
		}
	}
	r := check(t, unf, Params{})
	wantVerdict(t, r, Invalid)
	c := codes(r.Reasons)
	if c["stale-write-accepted"] != 1 || r.Resource.StaleAcceptedN != 1 {
		t.Fatalf("reasons %+v", r.Reasons)
	}
	if sa := r.Resource.StaleAccepted[0]; sa.Node != "c1" || sa.Token != 1 || sa.Max != 2 {
		t.Fatalf("stale write %+v", sa)
	}
	if c["fenced-register-illegal"] != 1 {
		t.Fatalf("porcupine should find the stale accept too: %+v", r.Porcupine.Models)
	}
	if c["interleaving"] != 1 {
		t.Fatalf("an older tenure's write after a newer one's is an interleaving: %+v", r.Reasons)
	}
	// The lease model: the resource saw c1 (token 1) after c2 (token 2) was granted.
	if m := model(r, ModelElectionLease); m.Result != PorcIllegal {
		t.Fatalf("election-lease on an accepted zombie write: %+v", m)
	}
	// Near miss: the fenced resource refused the zombie, so no observer saw an older leader.
	if m := model(fenced, ModelElectionLease); m.Result != PorcOK {
		t.Fatalf("election-lease with the zombie write rejected: %+v", m)
	}
}

func TestEqualTokenAcceptedVsLower(t *testing.T) {
	mk := func(second int64) *Results {
		h := newHB()
		h.campaign(5, "c1").elected(10, "c1", 5)
		h.add(history.Event{T: 20 * ms, Kind: history.KindDecision, Node: "c1", Token: 5, WriteID: "a", Result: "accepted", Mode: "fenced"})
		h.add(history.Event{T: 30 * ms, Kind: history.KindDecision, Node: "c1", Token: second, WriteID: "b", Result: "accepted", Max: 5, Stale: second < 5, Mode: "fenced"})
		return check(t, h.end(40), Params{})
	}
	eq := mk(5)
	if eq.Resource.StaleAcceptedN != 0 || codes(eq.Reasons)["stale-write-accepted"] != 0 {
		t.Fatalf("equal token is not stale: %+v", eq.Reasons)
	}
	low := mk(4)
	wantVerdict(t, low, Invalid)
	if low.Resource.StaleAcceptedN != 1 {
		t.Fatalf("lower token accepted must be stale: %+v", low.Resource)
	}
}

func TestResourceBug(t *testing.T) {
	mk := func(result string) *Results {
		h := newHB()
		h.campaign(5, "c1").elected(10, "c1", 5).writes(10, 100, "c1", 5)
		h.add(history.Event{T: 200 * ms, Kind: history.KindDecision, Node: "c1", Token: 5, WriteID: "x", Result: result, Max: 5, Mode: "fenced"})
		return check(t, h.end(300), Params{})
	}
	ok := mk("accepted")
	if ok.Resource.ResourceBugsN != 0 {
		t.Fatalf("%+v", ok.Resource.ResourceBugs)
	}
	bad := mk("rejected")
	if bad.Resource.ResourceBugsN != 1 || codes(bad.Reasons)["resource-bug"] != 1 || bad.Verdict == Valid {
		t.Fatalf("fresh write rejected must be a resource bug: %+v", bad.Reasons)
	}
}

func TestInterleavingWithBrokenTokens(t *testing.T) {
	// c2's newer tenure got a lower token than c1's older one (a split INCR); c2's winning
	// acquire was sent (15 ms) after c1's grant had returned (10 ms).
	h := newHB()
	h.campaign(5, "c1").campaign(15, "c2").elected(10, "c1", 9).elected(20, "c2", 8)
	h.add(history.Event{T: 30 * ms, Kind: history.KindDecision, Node: "c2", Token: 8, WriteID: "b", Result: "accepted", Mode: "fenced"})
	h.add(history.Event{T: 40 * ms, Kind: history.KindDecision, Node: "c1", Token: 9, WriteID: "a", Result: "accepted", Max: 8, Mode: "fenced"})
	r := check(t, h.end(50), Params{})
	c := codes(r.Reasons)
	if c["interleaving"] != 1 || c["token-not-monotone"] != 1 || c["stale-write-accepted"] != 0 {
		t.Fatalf("reasons %+v", r.Reasons)
	}
	// Near miss: c2's acquire was sent (5 ms) before c1's grant returned: the grants overlap,
	// either order is possible, so the inversion is a finding, not a token violation.
	h3 := newHB()
	h3.campaign(5, "c1").campaign(5, "c2").elected(10, "c1", 9).elected(20, "c2", 8)
	r3 := check(t, h3.end(50), Params{})
	if c := codes(r3.Reasons); c["token-not-monotone"] != 0 || codes(r3.Findings)["token-order-overlapping"] != 1 {
		t.Fatalf("overlapping grants: reasons %+v findings %+v", r3.Reasons, r3.Findings)
	}
	// Near miss: the same writes in election order are no interleaving.
	h2 := newHB()
	h2.campaign(5, "c1").campaign(5, "c2").elected(10, "c1", 8).elected(20, "c2", 9)
	h2.add(history.Event{T: 30 * ms, Kind: history.KindDecision, Node: "c1", Token: 8, WriteID: "a", Result: "accepted", Mode: "fenced"})
	h2.add(history.Event{T: 40 * ms, Kind: history.KindDecision, Node: "c2", Token: 9, WriteID: "b", Result: "accepted", Max: 8, Mode: "fenced"})
	r2 := check(t, h2.end(50), Params{})
	if c := codes(r2.Reasons); c["interleaving"] != 0 || c["token-not-monotone"] != 0 {
		t.Fatalf("near miss: %+v", r2.Reasons)
	}
}

func TestTokensHigherVsEqualVsLower(t *testing.T) {
	mk := func(second string, tok int64) *Results {
		h := newHB()
		h.campaign(5, "c1").elected(10, "c1", 5).writes(10, 200, "c1", 5).stepDown(250, "c1", "resign")
		h.campaign(260, second).elected(300, second, tok).writes(300, 500, second, tok)
		return check(t, h.end(600), Params{})
	}
	wantVerdict(t, mk("c2", 6), Valid)
	eq := mk("c2", 5)
	wantVerdict(t, eq, Invalid)
	if codes(eq.Reasons)["token-duplicate"] != 1 {
		t.Fatalf("%+v", eq.Reasons)
	}
	low := mk("c2", 4)
	wantVerdict(t, low, Invalid)
	if codes(low.Reasons)["token-not-monotone"] != 1 || low.Tokens.Anomalies[0].PrevToken != 5 {
		t.Fatalf("%+v", low.Reasons)
	}
	if model(low, ModelElectionLease).Result != PorcIllegal {
		t.Fatalf("lease election model should reject a lower token: %+v", model(low, ModelElectionLease))
	}
	// The same node re-elected with its own token right after is a continuation.
	wantVerdict(t, mk("c1", 5), Valid)
}

func TestContractViolations(t *testing.T) {
	// Elected without a token.
	h := newHB()
	h.campaign(5, "c1").elected(10, "c1", 0).writes(10, 100, "c1", 1).end(200)
	r := check(t, h, Params{})
	wantVerdict(t, r, Unknown)
	if r.Contract.ByKind["elected-without-token"] != 1 {
		t.Fatalf("%+v", r.Contract)
	}
	// A write outside any tenure vs inside.
	h = newHB()
	h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 100, "c1", 1).stepDown(150, "c1", "x").write(160, "c1", 1).end(200)
	r = check(t, h, Params{})
	wantVerdict(t, r, Unknown)
	if r.Contract.ByKind["write-without-tenure"] != 1 {
		t.Fatalf("%+v", r.Contract)
	}
	h = newHB()
	h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 100, "c1", 1).write(148, "c1", 1).stepDown(150, "c1", "x").end(200)
	wantVerdict(t, check(t, h, Params{}), Valid)
	// Malformed output recorded by the harness, and events out of order.
	h = newHB()
	h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 100, "c1", 1)
	h.add(history.Event{T: 120 * ms, Kind: history.KindContractViolation, Node: "c1", Reason: "not JSON", Line: "{oops"})
	h.campaign(50, "c1").end(200)
	r = check(t, h, Params{})
	wantVerdict(t, r, Unknown)
	if r.Contract.ByKind["malformed-output"] != 1 || r.Contract.ByKind["out-of-order"] != 1 {
		t.Fatalf("%+v", r.Contract)
	}
	// A safety violation is still proven despite contract violations.
	h.add(history.Event{T: 210 * ms, Kind: history.KindDecision, Node: "c1", Token: 0, WriteID: "z", Result: "accepted", Max: 1, Stale: true, Mode: "unfenced"})
	wantVerdict(t, check(t, h, Params{}), Invalid)
}

func TestNoRunEndIsUnknown(t *testing.T) {
	h := newHB()
	h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 100, "c1", 1)
	r := check(t, h, Params{})
	wantVerdict(t, r, Unknown)
	if codes(r.Reasons)["no-run-end"] != 1 {
		t.Fatalf("%+v", r.Reasons)
	}
	wantVerdict(t, check(t, h.end(200), Params{}), Valid)
}

func TestFencedRegisterCandidateView(t *testing.T) {
	// The candidates saw c1's token-1 write accepted after c2's token-2 write had returned:
	// no fenced register explains that, even if the resource log were lost.
	mk := func(call int64) *Results {
		h := newHB()
		h.campaign(5, "c1").campaign(5, "c2").elected(10, "c1", 1).elected(20, "c2", 2)
		h.add(history.Event{T: 40 * ms, Kind: history.KindWrite, Node: "c2", Token: 2, WriteID: "b", CallT: 30 * ms, Result: "accepted"})
		h.add(history.Event{T: 60 * ms, Kind: history.KindWrite, Node: "c1", Token: 1, WriteID: "a", CallT: call * ms, Result: "accepted"})
		return check(t, h.end(100), Params{})
	}
	bad := mk(50)
	if m := model(bad, ModelFencedRegister); m.Result != PorcIllegal || len(m.Unlinearized) == 0 {
		t.Fatalf("%+v", m)
	}
	wantVerdict(t, bad, Invalid)
	ok := mk(35) // concurrent with c2's write: c1's may have landed first
	if m := model(ok, ModelFencedRegister); m.Result != PorcOK {
		t.Fatalf("%+v", m)
	}
}

func TestUnknownWriteResolvedOrMaybeApplied(t *testing.T) {
	h := newHB()
	h.campaign(5, "c1").elected(10, "c1", 1).writes(10, 100, "c1", 1)
	h.add(history.Event{T: 200 * ms, Kind: history.KindWrite, Node: "c1", Token: 1, WriteID: "lost", CallT: 150 * ms, Result: "unknown"})
	h.writes(210, 300, "c1", 1).end(400)
	r := check(t, h, Params{})
	wantVerdict(t, r, Valid)
	if r.Resource.UnknownUnapplied != 1 || model(r, ModelFencedRegister).Note == "" {
		t.Fatalf("%+v %+v", r.Resource, model(r, ModelFencedRegister))
	}
}

func TestPorcupineTimeoutIsUnknownNeverValid(t *testing.T) {
	r := check(t, handoff(1000), Params{PorcupineTimeout: Duration(1)})
	if m := model(r, ModelFencedRegister); m.Result == PorcOK {
		t.Skip("porcupine finished within 1 ns; cannot provoke a timeout here") // would be astonishing
	}
	wantVerdict(t, r, Unknown)
	if codes(r.Reasons)["fenced-register-timeout"] != 1 {
		t.Fatalf("%+v", r.Reasons)
	}
}

func TestVisualizationsWritten(t *testing.T) {
	dir := t.TempDir()
	r := check(t, pausedLeader("pause"), Params{OutputDir: dir})
	for _, m := range r.Porcupine.Models {
		if m.Visualization == "" {
			t.Fatalf("%s: no visualization (%s)", m.Model, m.Note)
		}
		// The page must exist in the run directory and carry the fault window and both
		// tenures as annotations.
		page, err := os.ReadFile(filepath.Join(dir, filepath.Base(m.Visualization)))
		if err != nil {
			t.Fatalf("%s: %v", m.Model, err)
		}
		for _, want := range []string{`"faults"`, `"leader c1"`, `"leader c2"`, "token 2"} {
			if !strings.Contains(string(page), want) {
				t.Errorf("%s: %s lacks the annotation %s", m.Model, m.Visualization, want)
			}
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/"+ResultsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(dir + "/" + ResultsFile)
	if err != nil || back.Verdict != r.Verdict || len(back.Tenures.Tenures) != 2 {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

func TestParams(t *testing.T) {
	if _, err := ParseRequirements("exclusive,nonsense"); err == nil {
		t.Fatal("unknown requirement accepted")
	}
	reqs, err := ParseRequirements("liveness, exclusive,")
	if err != nil || len(reqs) != 2 {
		t.Fatal(reqs, err)
	}
	p := Params{LeaseTTL: Duration(2e9), RetryInterval: Duration(1e8)}
	if p.FailoverBound() != 3100*1e6 {
		t.Fatal(p.FailoverBound())
	}
	var d Duration
	if err := d.UnmarshalJSON([]byte(`"1.5s"`)); err != nil || d != Duration(15e8) {
		t.Fatal(d, err)
	}
	if err := d.UnmarshalJSON([]byte(`"soon"`)); err == nil {
		t.Fatal("bad duration accepted")
	}
	if err := (&Params{LeaseTTL: -1}).Validate(); err == nil {
		t.Fatal("negative TTL accepted")
	}
}

func TestStrictModelIgnoresInFlightWriteOfDeadLeader(t *testing.T) {
	// c1 is killed at 400 ms with a write in flight, c2 is elected at 420 ms, and the
	// resource accepts c1's write at 430 ms (c2 has not written yet, so fencing allows it).
	h := newHB()
	h.campaign(5, "c1").campaign(5, "c2").elected(10, "c1", 1).writes(10, 300, "c1", 1)
	h.fault(400, 1, "kill", "c1").add(history.Event{T: 400 * ms, Kind: history.KindProcessExit, Node: "c1"}).heal(900, 1)
	h.elected(420, "c2", 2)
	id := h.decide(430*ms, "c1", 1, "inflight")
	_ = id
	h.writes(500, 1000, "c2", 2).end(1100)
	r := check(t, h, Params{})
	if r.Tenures.OverlapCount != 0 {
		t.Fatalf("overlaps %+v", r.Tenures.Overlaps)
	}
	if m := model(r, ModelElectionStrict); m.Result != PorcOK {
		t.Fatalf("strict mutex without any overlap: %+v", m)
	}
	// The lease form does see it: the resource observed token 1 after token 2 was granted.
	if m := model(r, ModelElectionLease); m.Result != PorcIllegal {
		t.Fatalf("lease form: %+v", m)
	}
}

// Step events (optional contract event) are for fault triggers only: a history with them
// gets the same verdict, reasons and tenures as without.
func TestStepEventsAreIgnored(t *testing.T) {
	for _, c := range []struct {
		c2Start int64
		p       Params
	}{{1000, Params{}}, {999, Params{Require: []string{RequireExclusive}}}} {
		plain := check(t, handoff(c.c2Start), c.p)
		h := handoff(c.c2Start)
		var ev []history.Event
		for _, e := range h.ev {
			if e.Kind == history.KindElected || e.Kind == history.KindSteppedDown {
				// Before it, on the same node: a lock taken before elected is printed.
				ev = append(ev, history.Event{V: history.Version, T: e.T, Source: history.SourceCandidate, Kind: history.KindStep, Node: e.Node, Name: "lock-acquired"})
			}
			ev = append(ev, e)
		}
		for i := range ev {
			ev[i].Seq = int64(i + 1)
		}
		h.ev = ev
		withSteps := check(t, h, c.p)
		if withSteps.Verdict != plain.Verdict || fmt.Sprint(codes(withSteps.Reasons)) != fmt.Sprint(codes(plain.Reasons)) ||
			fmt.Sprint(codes(withSteps.Findings)) != fmt.Sprint(codes(plain.Findings)) || len(withSteps.Tenures.Tenures) != len(plain.Tenures.Tenures) ||
			withSteps.Contract.Count != plain.Contract.Count {
			t.Fatalf("step events changed the outcome: %s %v %v vs %s %v %v", withSteps.Verdict, withSteps.Reasons, withSteps.Contract, plain.Verdict, plain.Reasons, plain.Contract)
		}
	}
}
