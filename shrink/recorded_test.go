package shrink

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
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
