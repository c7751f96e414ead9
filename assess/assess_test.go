package assess

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
)

func names(cs []Check) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func skippedNames(ss []Skipped) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

// The battery follows the store facts and the candidate: a store-majority split only where
// the store has a leader of its own, store faults only with a store, the zombie window only
// for a candidate that declares the leader-work step.
func TestPlanFollowsStoreAndCandidate(t *testing.T) {
	for _, tc := range []struct {
		name         string
		opts         Options
		want, absent []string
	}{
		{"external on etcd", Options{Store: "etcd", CandidateCmd: []string{"cand.sh"}, OutDir: "x"},
			[]string{"fault-free", "handoff", "kill-leader", "pause-leader", "store-split", "clock-rate", "store-outage", "explore"},
			[]string{"zombie-window"}},
		{"external declaring leader-work", Options{Store: "etcd", CandidateCmd: []string{"cand.sh"}, OutDir: "x", Steps: []string{"lease-checked", "leader-work"}},
			[]string{"zombie-window", "pause-leader"}, nil},
		{"external declaring other steps", Options{Store: "etcd", CandidateCmd: []string{"cand.sh"}, OutDir: "x", Steps: []string{"lease-checked"}},
			[]string{"pause-leader"}, []string{"zombie-window"}},
		{"recipe on etcd", Options{Store: "etcd", Recipe: "etcd-election", OutDir: "x"},
			[]string{"zombie-window", "store-split", "leader-cut-silent", "leader-cut-refused", "half-open"}, nil},
		{"recipe on redis", Options{Store: "redis", Recipe: "redis-setnx", OutDir: "x"},
			[]string{"zombie-window", "leader-cut-silent", "latency", "reset"}, []string{"store-split"}},
		{"library under libfaketime", Options{Store: "zookeeper", Recipe: "kazoo-election", OutDir: "x"},
			[]string{"clock-bump", "store-outage", "zombie-window"}, []string{"clock-rate"}},
		{"Java library: no leader-work step", Options{Store: "zookeeper", Recipe: "curator-leaderlatch", OutDir: "x"},
			[]string{"pause-leader"}, []string{"zombie-window"}},
		{"peers without a store", Options{Store: "none", Recipe: "bully", OutDir: "x"},
			[]string{"kill-leader", "pause-leader", "clock-bump", "waiter-killed"},
			[]string{"store-split", "leader-cut-silent", "latency", "store-outage", "follower-cut-then-kill"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, skipped, err := PlanWithSkips(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := names(cs)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("plan %v lacks %s", got, w)
				}
			}
			for _, a := range tc.absent {
				if slices.Contains(got, a) {
					t.Errorf("plan %v has %s", got, a)
				}
				if !slices.Contains(skippedNames(skipped), a) {
					t.Errorf("%s is neither planned nor listed as left out (%v)", a, skipped)
				}
			}
			for _, c := range cs {
				if c.Resource != ResourceUnfenced {
					t.Errorf("%s plans on %q: every check starts unfenced", c.Name, c.Resource)
				}
			}
		})
	}
}

// Every fixed check of the battery is a valid matrix row for a recipe: suite.CaseOf accepts
// it, paced profiles get their cycle, and faulty checks get a derived failover bound.
func TestEveryCheckIsARunnableCase(t *testing.T) {
	opts := Options{Store: "etcd", Recipe: "etcd-election", OutDir: t.TempDir()}
	cs, err := Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{opts: opts}
	for _, c := range cs {
		if c.Explore {
			continue
		}
		k, err := r.caseFor(c)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if err := harness.CheckConfig(&k.Config); err != nil {
			t.Errorf("%s: the harness refuses its configuration: %v", c.Name, err)
		}
		if c.Paced && k.Config.Cycles != 1 {
			t.Errorf("%s: paced check runs %d cycles, want 1", c.Name, k.Config.Cycles)
		}
		// 1.5 TTL of writes after the heal: time for a zombie leader to show (zombie.go).
		if c.Paced && k.Config.Until != "writes=60" {
			t.Errorf("%s: until %q, want writes=60 at TTL 2s", c.Name, k.Config.Until)
		}
		if c.Fault != "none" && k.Row.Expect.FailoverMax <= 0 {
			t.Errorf("%s: no derived failover bound", c.Name)
		}
		if c.Name == "store-outage" {
			plain, _ := r.caseFor(Check{Name: "x", Fault: c.Fault, Paced: true, Duration: c.Duration, Resource: ResourceUnfenced})
			if got, want := k.Row.Expect.FailoverMax-plain.Row.Expect.FailoverMax, 3*k.Config.TTL; got != want {
				t.Errorf("store-outage bound adds %v to the derived one, want the outage, %v", got, want)
			}
		}
		if k.Config.ResourceMode != ResourceUnfenced {
			t.Errorf("%s: resource %q", c.Name, k.Config.ResourceMode)
		}
		if !strings.HasPrefix(k.Config.StoreRoot, opts.OutDir) {
			t.Errorf("%s: runs under %s, not under the out dir", c.Name, k.Config.StoreRoot)
		}
	}
}

func TestPlanRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Store: "etcd", OutDir: "x"}, "nothing to assess"},
		{Options{Store: "etcd", Recipe: "etcd-election", CandidateImage: "img", OutDir: "x"}, "not 2"},
		{Options{Store: "etcd", CandidateCmd: []string{"a", "--flag"}, OutDir: "x"}, "passes no arguments"},
		{Options{Store: "etcd", Recipe: "etcd-election", OutDir: "x", Checks: []string{"kill-leader", "pause"}}, `unknown check "pause"`},
		{Options{Store: "etcd", Recipe: "etcd-election", OutDir: "x", Resource: "maybe"}, `resource "maybe"`},
		{Options{Store: "etcd", Recipe: "etcd-election", OutDir: "x", Parallel: 9}, "parallel 9: want 1 to 4"},
		{Options{Store: "etcd", Recipe: "etcd-election", OutDir: "x", ExploreRuns: 1000000}, "explore runs 1000000: want 1 to 50"},
		{Options{Store: "nosuch", Recipe: "etcd-election", OutDir: "x"}, `unknown store "nosuch"`},
		{Options{Store: "redis", Recipe: "redis-setnx", OutDir: "x", Checks: []string{"store-split"}}, "no check"},
		{Options{Store: "redis", Recipe: "etcd-election", OutDir: "x"}, "runs on store etcd"},
		{Options{Store: "etcd", Recipe: "etcd-election", OutDir: "x", Steps: []string{"leader-work"}}, "declares its own steps"},
		{Options{Store: "etcd", CandidateImage: "img", OutDir: "x", Steps: []string{"Leader Work"}}, `step "Leader Work"`},
	} {
		_, err := Plan(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Plan(%+v) = %v, want an error with %q", tc.opts, err, tc.want)
		}
	}
}

func result(name, verdict string, fenced bool, reason string) CheckResult {
	r := CheckResult{Check: Check{Name: name, Resource: ResourceUnfenced}, Verdict: verdict, Fenced: fenced, Reason: reason}
	if reason != "" {
		r.Reasons = []string{reason}
	}
	if fenced {
		r.Check.Resource = ResourceFenced
	}
	return r
}

func unfenceable(r CheckResult) CheckResult {
	r.Unfenceable = []string{r.Reason}
	return r
}

// The grades and the verdict: a check safe only with its fence passes when judged on the
// fenced resource and fails on the unfenced one; unsafe with the fence fails both; a check
// that did not run or proved nothing is never a pass.
func TestScorecardVerdictAndSummary(t *testing.T) {
	base := []CheckResult{
		result("fault-free", "valid", false, ""),
		result("pause-leader", "invalid", false, "stale-write-accepted"),
		result("pause-leader", "valid", true, ""),
	}
	for _, tc := range []struct {
		name     string
		extra    []CheckResult
		resource string
		verdict  string
		summary  []string
	}{
		{"fence saves it, judged fenced", nil, ResourceFenced, "valid",
			[]string{"safe under 1 of 2 checks", "unsafe without fencing (the fence saves it) under pause-leader"}},
		{"fence saves it, judged unfenced", nil, ResourceUnfenced, "invalid", nil},
		{"unsafe even with fencing", []CheckResult{result("handoff", "invalid", false, "stale-write-accepted"), result("handoff", "invalid", true, "interleaving")},
			ResourceFenced, "invalid", []string{"UNSAFE even with fencing under handoff (interleaving)"}},
		{"a duplicate token is unsafe whatever the fenced rerun showed", []CheckResult{unfenceable(result("store-split", "invalid", false, "token-duplicate")), result("store-split", "valid", true, "")},
			ResourceFenced, "invalid", []string{"UNSAFE even with fencing under store-split (token-duplicate)"}},
		{"a duplicate token needs no fenced rerun", []CheckResult{unfenceable(result("handoff", "invalid", false, "token-duplicate"))},
			ResourceFenced, "invalid", []string{"UNSAFE even with fencing under handoff (token-duplicate)"}},
		{"not run is not a pass", []CheckResult{{Check: Check{Name: "explore"}, Verdict: VerdictNotRun, NotRun: "budget"}},
			ResourceFenced, "unknown", []string{"1 not run (explore)"}},
		{"unknown is not a pass", []CheckResult{result("kill-leader", "unknown", false, "goal-not-reached")},
			ResourceFenced, "unknown", []string{"nothing proved under kill-leader"}},
		{"fenced rerun missing", []CheckResult{result("reset", "invalid", false, "stale-write-accepted")},
			ResourceFenced, "unknown", []string{"whether a fence saves it is open"}},
		{"a token-less library's failure is not an open question", []CheckResult{result("latency", "invalid", false, "stale-write-accepted")},
			"tokenless", "invalid", []string{"UNSAFE, and no fence can save it (the library gives no fencing token), under latency (stale-write-accepted)"}},
		{"a fence check that fails is unsafe, not open", []CheckResult{func() CheckResult {
			r := result("fence-lying", "invalid", false, "stale-write-accepted")
			r.Check.Fence = "fence-lying"
			return r
		}()}, ResourceFenced, "invalid", []string{"UNSAFE when its fence device misbehaves (the power-off it relied on did not protect the resource) under fence-lying (stale-write-accepted)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &Scorecard{Target: "recipe x", Store: "etcd", Resource: tc.resource, Results: append(slices.Clone(base), tc.extra...)}
			if tc.resource == "tokenless" {
				sc.Resource, sc.Tokenless = ResourceUnfenced, true
			}
			sc.Finish()
			if sc.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s (%s)", sc.Verdict, tc.verdict, sc.Summary)
			}
			for _, s := range tc.summary {
				if !strings.Contains(sc.Summary, s) {
					t.Errorf("summary %q lacks %q", sc.Summary, s)
				}
			}
		})
	}
}

func TestSummaryNamesTheSlowestFailoverAgainstItsBound(t *testing.T) {
	a := result("kill-leader", "valid", false, "")
	a.Failovers, a.FailoverP99, a.Bound = 3, 2100*time.Millisecond, 7*time.Second
	b := result("pause-leader", "valid", false, "")
	b.Failovers, b.FailoverP99, b.Bound = 1, 900*time.Millisecond, 7*time.Second
	sc := &Scorecard{Target: "recipe x", Store: "etcd", Resource: ResourceFenced, Results: []CheckResult{a, b}}
	sc.Finish()
	if want := "failover p99 2.1 s (kill-leader) vs 7 s bound"; !strings.Contains(sc.Summary, want) {
		t.Errorf("summary %q lacks %q", sc.Summary, want)
	}
}

// A budget nothing fits: every check is listed as not run, the verdict is unknown, and the
// scorecard files are written. Nothing starts, so no Docker is needed.
func TestRunWithoutBudgetRunsNothingAndSaysSo(t *testing.T) {
	out := t.TempDir()
	sc, err := Run(context.Background(), Options{Store: "etcd", Recipe: "etcd-election", OutDir: out, Budget: time.Nanosecond,
		Checks: []string{"fault-free", "kill-leader", "explore"}})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Verdict != harness.VerdictUnknown {
		t.Errorf("verdict %s, want unknown", sc.Verdict)
	}
	if len(sc.Results) != 3 {
		t.Fatalf("%d results, want 3", len(sc.Results))
	}
	for _, r := range sc.Results {
		if r.Verdict != VerdictNotRun || !strings.Contains(r.NotRun, "budget") {
			t.Errorf("%s: %s (%s), want not run for the budget", r.Check.Name, r.Verdict, r.NotRun)
		}
	}
	for _, f := range []string{ScorecardHTML, ScorecardJSON, ScorecardJUnit} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	junit, _ := os.ReadFile(filepath.Join(out, ScorecardJUnit))
	if n := strings.Count(string(junit), "<testcase "); n != 3 {
		t.Errorf("junit.xml has %d test cases, want 3", n)
	}
	if !strings.Contains(string(junit), `errors="3"`) {
		t.Errorf("junit.xml does not count the 3 checks not run as errors:\n%s", junit)
	}
	again, err := Run(context.Background(), Options{Store: "etcd", Recipe: "etcd-election", OutDir: out, Budget: time.Nanosecond,
		Checks: []string{"fault-free", "kill-leader", "explore"}})
	if err != nil {
		t.Fatal(err)
	}
	if again.Invocations != 2 || again.Total < sc.Total {
		t.Errorf("second invocation: %d invocations, total %v (first %v): want 2 and a growing total", again.Invocations, again.Total, sc.Total)
	}
}

// Resume: finished results of the same subject, confirmed by their run directories, are
// carried over; a changed run option starts over and says why; another subject's state is
// refused with a way out.
func TestResumeState(t *testing.T) {
	out := t.TempDir()
	o := Options{Store: "etcd", Recipe: "etcd-election", OutDir: out}
	st, err := loadState(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	done := result("kill-leader", "valid", false, "")
	if done.RunDir, err = writeRunDir(out, "kill-leader", 1, "valid"); err != nil {
		t.Fatal(err)
	}
	st.Results["kill-leader"] = done
	st.Results["explore"] = CheckResult{Check: Check{Name: "explore"}, Verdict: VerdictNotRun}
	if err := st.save(); err != nil {
		t.Fatal(err)
	}
	again, err := loadState(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Results["kill-leader"]; !ok {
		t.Errorf("the finished check was not carried over: %v", again.notes)
	}
	if _, ok := again.Results["explore"]; ok {
		t.Error("a check that did not run was carried over as done")
	}
	other := o
	other.Seed = 7
	fresh, err := loadState(context.Background(), other)
	if err != nil || len(fresh.Results) != 0 || len(fresh.notes) != 1 ||
		!strings.Contains(fresh.notes[0], "--seed changed since the saved state (1 → 7): starting over") {
		t.Errorf("another seed's state: %v, %d results, notes %q: want a fresh start that says why", err, len(fresh.Results), fresh.notes)
	}
	other = o
	other.Steps = []string{"leader-work"}
	if fresh, err := loadState(context.Background(), other); err != nil || len(fresh.Results) != 0 || len(fresh.notes) != 1 ||
		!strings.Contains(fresh.notes[0], "--steps changed since the saved state ( → leader-work)") {
		t.Errorf("other declared steps: %v, %d results, notes %q: want a fresh start (the steps change the runs)", err, len(fresh.Results), fresh.notes)
	}
	other = o
	other.Recipe, other.Store = "", "redis"
	other.CandidateImage = "cand:1"
	if _, err := loadState(context.Background(), other); !errors.Is(err, errStateMismatch) || !strings.Contains(err.Error(), "another out directory") {
		t.Errorf("another subject's state: %v, want a mismatch that says what to do", err)
	}
	os.WriteFile(filepath.Join(out, StateFile), []byte("{"), 0o644)
	if _, err := loadState(context.Background(), o); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("a torn state: %v", err)
	}
}

// A rebuilt candidate at the same path is another candidate: the second assessment runs
// every check again and says why, instead of declaring the new build safe from the old
// build's runs.
func TestResumeOfARebuiltCandidateRunsEverything(t *testing.T) {
	dir := t.TempDir()
	cand := filepath.Join(dir, "cand.sh")
	if err := os.WriteFile(cand, []byte("#!/bin/sh\necho one\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	opts := Options{Store: "redis", CandidateCmd: []string{cand}, OutDir: filepath.Join(dir, "out"), Progress: &progress,
		Checks: []string{"fault-free", "kill-leader"}}
	f := &fakeRuns{wall: time.Second, outDir: opts.OutDir}
	if _, err := runWith(context.Background(), opts, f.run); err != nil {
		t.Fatal(err)
	}
	f.ran = nil
	if _, err := runWith(context.Background(), opts, f.run); err != nil {
		t.Fatal(err)
	}
	if len(f.ran) != 0 {
		t.Fatalf("the same candidate ran %v again, want nothing: %s", f.ran, progress.String())
	}
	before, _ := harness.CandidateDigest(cand)
	if err := os.WriteFile(cand, []byte("#!/bin/sh\necho two\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	after, _ := harness.CandidateDigest(cand)
	progress.Reset()
	sc, err := runWith(context.Background(), opts, f.run)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"kill-leader", "fault-free"}; !slices.Equal(f.ran, want) {
		t.Errorf("after the rebuild ran %v, want %v", f.ran, want)
	}
	why := fmt.Sprintf("the candidate changed since the saved state (%s → %s): starting over", shortDigest(before), shortDigest(after))
	if !strings.Contains(progress.String(), why) || !strings.HasPrefix(shortDigest(before), "sha256 ") {
		t.Errorf("progress does not say %q:\n%s", why, progress.String())
	}
	if sc.Invocations != 1 {
		t.Errorf("%d invocations: a fresh start counts from 1", sc.Invocations)
	}
}

// A saved result is carried over only when its run directory confirms it: a missing run
// directory, a results.json with another verdict, or a run directory outside the out dir
// make that check run again (the report's repro: valid results pointing at no directory).
func TestResumeRerunsWhatTheRunDirectoryDoesNotConfirm(t *testing.T) {
	var progress bytes.Buffer
	opts := Options{Store: "etcd", Recipe: "etcd-election", OutDir: t.TempDir(), Progress: &progress,
		Checks: []string{"handoff", "pause-leader", "kill-leader", "fault-free"}}
	f := &fakeRuns{wall: time.Second, outDir: opts.OutDir}
	if _, err := runWith(context.Background(), opts, f.run); err != nil {
		t.Fatal(err)
	}
	st, err := loadState(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(st.Results["handoff"].RunDir); err != nil {
		t.Fatal(err)
	}
	if err := writeResults(st.Results["pause-leader"].RunDir, "invalid", "stale-write-accepted"); err != nil {
		t.Fatal(err)
	}
	outside := st.Results["kill-leader"]
	outside.RunDir = "/nonexistent/run"
	st.Results["kill-leader"] = outside
	if err := st.save(); err != nil {
		t.Fatal(err)
	}
	f.ran = nil
	progress.Reset()
	if _, err := runWith(context.Background(), opts, f.run); err != nil {
		t.Fatal(err)
	}
	if want := []string{"handoff", "pause-leader", "kill-leader"}; !slices.Equal(f.ran, want) {
		t.Errorf("ran %v, want %v (fault-free's run directory confirms it)", f.ran, want)
	}
	for _, want := range []string{"handoff: the saved verdict valid is not carried over (its run directory " + filepath.Join(opts.OutDir, RunsDir, "handoff", "r1") + " is missing): it runs again",
		"pause-leader: the saved verdict valid is not carried over (its run directory " + st.Results["pause-leader"].RunDir + " says invalid)",
		"kill-leader: the saved verdict valid is not carried over (its run directory /nonexistent/run is not under "} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
}

// A candidate image is fingerprinted by its id (a tag may name a rebuild), a recipe by the
// splitbrain build its code is in; a fingerprint that cannot be taken trusts nothing.
func TestResumeFingerprintsImagesAndRecipes(t *testing.T) {
	oldImage, oldBuild := imageID, buildDigest
	t.Cleanup(func() { imageID, buildDigest = oldImage, oldBuild })
	id, build := "sha256:aaaaaaaaaaaaaaaa", "sha256:1111111111111111"
	imageID = func(context.Context, string) (string, error) {
		if id == "" {
			return "", errors.New("no Docker engine answers")
		}
		return id, nil
	}
	buildDigest = func() (string, error) { return build, nil }
	for _, o := range []Options{{Store: "etcd", CandidateImage: "cand:1"}, {Store: "etcd", Recipe: "etcd-election"}} {
		o.OutDir = t.TempDir()
		st, err := loadState(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		r := result("kill-leader", "valid", false, "")
		if r.RunDir, err = writeRunDir(o.OutDir, "kill-leader", 1, "valid"); err != nil {
			t.Fatal(err)
		}
		st.Results["kill-leader"] = r
		if err := st.save(); err != nil {
			t.Fatal(err)
		}
		if again, err := loadState(context.Background(), o); err != nil || len(again.Results) != 1 {
			t.Fatalf("%s unchanged: %v, notes %q", st.Subject.who(), err, again.notes)
		}
		id, build = "sha256:bbbbbbbbbbbbbbbb", "sha256:2222222222222222"
		again, err := loadState(context.Background(), o)
		if err != nil || len(again.Results) != 0 || len(again.notes) != 1 || !strings.Contains(again.notes[0], "changed since the saved state (sha256 ") {
			t.Errorf("%s rebuilt: %v, %d results, notes %q: want a fresh start", st.Subject.who(), err, len(again.Results), again.notes)
		}
		if o.CandidateImage != "" {
			id = ""
			again, err := loadState(context.Background(), o)
			if err != nil || len(again.Results) != 0 || len(again.notes) != 1 || !strings.Contains(again.notes[0], "cannot be fingerprinted (no Docker engine answers)") {
				t.Errorf("image without an engine: %v, %d results, notes %q: want a fresh start", err, len(again.Results), again.notes)
			}
		}
		id, build = "sha256:aaaaaaaaaaaaaaaa", "sha256:1111111111111111"
	}
}

func TestScorecardJSONRoundTrips(t *testing.T) {
	sc := &Scorecard{Target: "recipe x", Store: "etcd", Resource: ResourceFenced, Results: []CheckResult{result("fault-free", "valid", false, "")}}
	sc.Finish()
	b, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	var back Scorecard
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Verdict != "valid" || len(back.Checks) != 1 || back.Checks[0].Grade != GradeSafe {
		t.Errorf("round trip: %+v", back)
	}
}

func TestFencedRerunOnlyWhereAFenceCanHelp(t *testing.T) {
	c := Check{Name: "pause-leader", Fault: "pause-leader", Paced: true, Resource: ResourceUnfenced}
	if _, ok := FencedRerun(c, result("pause-leader", "valid", false, "")); ok {
		t.Error("a pass gets a fenced rerun")
	}
	if _, ok := FencedRerun(c, unfenceable(result("pause-leader", "invalid", false, "token-duplicate"))); ok {
		t.Error("a duplicate token gets a fenced rerun")
	}
	f, ok := FencedRerun(c, result("pause-leader", "invalid", false, "stale-write-accepted"))
	if !ok || f.Resource != ResourceFenced || f.Key() != "pause-leader/fenced" {
		t.Errorf("stale write: rerun %v %+v, want the fenced form", ok, f)
	}
	e := Check{Name: "explore", Explore: true, Resource: ResourceUnfenced}
	found := result("explore", "invalid", false, "stale-write-accepted")
	found.Spec, found.Seed = "pause:target=leader,for=2xTTL,at=3s", 42
	if f, ok := FencedRerun(e, found); !ok || f.Fault != found.Spec || f.Seed != 42 {
		t.Errorf("explore's rerun %+v: want the find's schedule and seed", f)
	}
}

// A state written before the content binding (no fingerprint) starts over with one reason,
// not a list of every option it did not save.
func TestResumeOfAStateWithoutFingerprint(t *testing.T) {
	o := Options{Store: "etcd", Recipe: "etcd-election", OutDir: t.TempDir()}
	old := `{"subject":{"Store":"etcd","Recipe":"etcd-election","Seed":1,"TTL":2000000000},` +
		`"results":{"kill-leader":{"check":{"name":"kill-leader"},"verdict":"valid","run_dir":"runs/kill-leader/old"}}}`
	if err := os.WriteFile(filepath.Join(o.OutDir, StateFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := loadState(context.Background(), o)
	if err != nil || len(st.Results) != 0 || len(st.notes) != 1 ||
		st.notes[0] != "the saved state holds no fingerprint of the splitbrain build (the recipe's code); an older splitbrain wrote it: starting over (the earlier runs stay under "+filepath.Join(o.OutDir, RunsDir)+")" {
		t.Errorf("%v, %d results, notes %q", err, len(st.Results), st.notes)
	}
}
