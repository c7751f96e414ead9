package shrink

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// A config.json written by a real run (reports/runconfig's fixture) becomes the same run
// configuration with its concrete plan, linked back to the original directory.
func TestLoadRecordedRun(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "redis-redis-setnx-partition", "20261122T000000.000Z")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../reports/runconfig/testdata/run/config.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
	os.WriteFile(filepath.Join(dir, harness.ResultsFile), []byte(`{"verdict":"invalid","reasons":[{"code":"stale-write-accepted"},{"code":"interleaving"},{"code":"stale-write-accepted"}]}`), 0o644)

	rec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := rec.Config
	if c.Store != "redis" || c.Recipe != "redis-setnx" || c.Nodes != 3 || c.FaultTime != 15*time.Second || c.Warmup != 3*time.Second ||
		c.Recovery != 5*time.Second || c.TTL != 2*time.Second || c.WriteInterval != 50*time.Millisecond || c.ResourceMode != "fenced" || c.Seed != 1 {
		t.Fatalf("config not carried over: %+v", c)
	}
	if c.Plan == nil || len(c.Plan.Faults) != 1 || c.Plan.Faults[0].Kind != "partition" || time.Duration(c.Plan.Faults[0].At) != 5983*time.Millisecond {
		t.Fatalf("plan not carried over: %+v", c.Plan)
	}
	if c.ReplayOf != dir || c.StoreRoot != root || rec.TestName() != "redis-redis-setnx-partition" {
		t.Fatalf("links: replay_of %q root %q test %q", c.ReplayOf, c.StoreRoot, rec.TestName())
	}
	if rec.Verdict != "invalid" || strings.Join(rec.Codes, ",") != "interleaving,stale-write-accepted" {
		t.Fatalf("verdict %s codes %v", rec.Verdict, rec.Codes)
	}
	if err := harness.CheckConfig(&c); err != nil {
		t.Fatalf("the recorded configuration does not validate: %v", err)
	}
	start, err := rec.CaseOf()
	if err != nil {
		t.Fatal(err)
	}
	again := ForCase(rec.Config, start)
	if again.FaultTime != c.FaultTime || again.Nodes != 3 || again.Plan == c.Plan {
		t.Fatalf("ForCase: %+v (the plan must be a copy)", again)
	}

	// Not a run directory: a clear error.
	if _, err := Load(root); err == nil || !strings.Contains(err.Error(), "not a run directory") {
		t.Fatalf("Load of a non-run dir: %v", err)
	}
}

func TestArgDuration(t *testing.T) {
	args := []string{"splitbrain", "run", "--handoff-every", "4s", "-handoff-pause=1500ms"}
	if d := argDuration(args, "handoff-every"); d != 4*time.Second {
		t.Fatalf("handoff-every %v", d)
	}
	if d := argDuration(args, "handoff-pause"); d != 1500*time.Millisecond {
		t.Fatalf("handoff-pause %v", d)
	}
	if d := argDuration(args, "time"); d != 0 {
		t.Fatalf("absent flag %v", d)
	}
}

// What the find's run was given besides the store, candidate and phases (the candidate's
// timing, its packages, arguments and environment, a write interval, the handoff periods)
// goes into the shrink's tries and the printed line: without it the shrink and the
// reproduction ran another configuration, and the line another still (issue 48).
func TestRunLineKeepsTheRunsFlags(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "redis-candidate-explore", "20261129T000000.000Z")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"flags":{"store":"redis","candidate_cmd":"/bin/true","nodes":3,"time":"30s","warmup":"8s","recovery":"5s","ttl":"2s",
"write_interval":"200ms","workload":"steady","resource":"unfenced","nemesis":"none","seed":7,"profile":"local",
"renew_interval":"500ms","retry_interval":"300ms","leader_work":"0s","failover_bound":"9s",
"candidate_packages":["python3","python3-redis"],"candidate_args":["--variant","buggy"],"candidate_env":["MODE=it's"]},
"seed":7,"args":["splitbrain","run","--handoff-every","4s"]}`
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644)
	os.WriteFile(filepath.Join(dir, harness.ResultsFile), []byte(`{"verdict":"invalid","reasons":[{"code":"interleaving"}]}`), 0o644)
	rec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := rec.Config
	if c.RenewInterval != 500*time.Millisecond || c.RetryInterval != 300*time.Millisecond || c.FailoverBound != 9*time.Second ||
		!c.LeaderWorkSet || c.LeaderWork != 0 || strings.Join(c.CandidatePackages, ",") != "python3,python3-redis" ||
		strings.Join(c.CandidateArgs, " ") != "--variant buggy" || strings.Join(c.CandidateEnv, " ") != "MODE=it's" {
		t.Fatalf("not carried over: %+v", c)
	}
	line, _ := RunLine(c, Case{Nodes: 3, Warmup: 8 * time.Second, Recovery: 5 * time.Second, Plan: nemesis.Plan{FaultPhase: nemesis.Duration(30 * time.Second)}})
	for _, want := range []string{" --write-interval 200ms", " --handoff-every 4s", " --renew-interval 500ms", " --retry-interval 300ms",
		" --failover-bound 9s", " --leader-work 0s", " --candidate-packages python3,python3-redis", " --candidate-arg --variant --candidate-arg buggy",
		` --candidate-env 'MODE=it'\''s'`} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q:\n%s", want, line)
		}
	}
}

// A find that was invalid and also missed its goal (goal-not-met, fault-missing beside
// token-duplicate: redis-py-lock's store-amnesia find, issue 48) is reproduced by a try that
// is invalid with one of its invalid codes, not by any invalid try that missed its goal too.
func TestFailsAsCountsInvalidCodesOnly(t *testing.T) {
	root := t.TempDir()
	write := func(name, results string) string {
		dir := filepath.Join(root, name)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, harness.ResultsFile), []byte(results), 0o644)
		return dir
	}
	find := write("find", `{"verdict":"invalid","reasons":[{"code":"fault-missing","severity":"unknown"},{"code":"goal-not-met","severity":"unknown"},{"code":"token-duplicate","severity":"invalid"}]}`)
	rec := &Recorded{Invalid: ReadInvalid(find)}
	want := rec.Want()
	if strings.Join(want, ",") != "token-duplicate" {
		t.Fatalf("want %v, the invalid code alone", want)
	}
	other := write("other", `{"verdict":"invalid","reasons":[{"code":"goal-not-met","severity":"unknown"},{"code":"stale-write-accepted","severity":"invalid"}]}`)
	if FailsAs(other, "invalid", want) {
		t.Error("an invalid try sharing only goal-not-met counted as the find again")
	}
	again := write("again", `{"verdict":"invalid","reasons":[{"code":"token-duplicate","severity":"invalid"}]}`)
	if !FailsAs(again, "invalid", want) {
		t.Error("the find's own invalid code did not count")
	}
}
