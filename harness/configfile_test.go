package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

func TestWriteConfigForReplay(t *testing.T) {
	cfg := Config{Store: "redis", Recipe: "redis-setnx", FaultTime: 30 * time.Second, Nemesis: "pause-leader",
		Seed: 42, Require: []string{"liveness"}, StoreRoot: t.TempDir(), Args: []string{"splitbrain", "run"}}
	if err := CheckConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	prep, err := prepare(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{cfg: cfg, prep: prep, log: &journal{dir: t.TempDir(), started: time.Now()}, runID: "r1"}
	if err := r.writeConfig(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(r.log.dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"splitbrain", "run_id", "replay", "flags", "seed", "schedule", "workload", "check"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("config.json lacks %q", key)
		}
	}
	rc, err := ReadRunConfig(r.log.dir)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Seed != 42 || rc.Check.Store != "redis" || rc.Check.Recipe != "redis-setnx" || len(rc.Check.Nodes) != 3 ||
		rc.Check.LeaseTTL.D() <= 0 || rc.Check.Require[0] != "liveness" {
		t.Errorf("config %+v", rc)
	}
	for _, want := range []string{"--store redis", "--recipe redis-setnx", "--seed 42", "--nemesis pause-leader", "--require liveness", "--time 30s"} {
		if !strings.Contains(rc.Replay, want) {
			t.Errorf("replay %q lacks %q", rc.Replay, want)
		}
	}
}

func TestCheckConfigRegistries(t *testing.T) {
	cases := []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Recipe = "no-such-recipe" }, `unknown recipe "no-such-recipe"`},
		{func(c *Config) { c.Store, c.Recipe = "redis", "etcd-election" }, `runs on store "etcd", not "redis"`},
		{func(c *Config) { c.Workload = "chaos" }, "valid workloads are handoff, steady"},
		{func(c *Config) { c.Nemesis = "teleport:target=leader" }, "--nemesis"},
		// A trigger that can never fire for the recipe: etcd-election emits only lock-acquired.
		{func(c *Config) { c.Nemesis = "pause:on=step:token-drawn,for=2s" }, `recipe etcd-election never emits step "token-drawn"`},
		{func(c *Config) { c.Nemesis = "pause:on=elected,after=-1s" }, "after=-1s is negative"},
		{func(c *Config) { c.Nemesis = "pause:on=leader-change" }, `unknown event "leader-change"`},
	}
	for _, tc := range cases {
		c := Config{Store: "etcd", Recipe: "etcd-election", FaultTime: time.Second}
		tc.mod(&c)
		err := CheckConfig(&c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	ok := Config{Store: "etcd", Recipe: "etcd-election", FaultTime: 10 * time.Second, Nemesis: "pause:on=step:lock-acquired,for=2s"}
	if err := CheckConfig(&ok); err != nil {
		t.Errorf("a step the recipe emits: %v", err)
	}
	ext := Config{Store: "etcd", CandidateCmd: "/bin/true", FaultTime: 10 * time.Second, Nemesis: "pause:on=step:anything,for=2s"}
	if err := CheckConfig(&ext); err != nil {
		t.Errorf("an external candidate's steps are taken on trust: %v", err)
	}
	c := Config{Store: "etcd", Recipe: "etcd-election", FaultTime: time.Second}
	if err := CheckConfig(&c); err != nil || c.Seed == 0 {
		t.Errorf("valid config: %v, seed %d", err, c.Seed)
	}
}

// The timing flags reach the candidates' environment, the checkers and the replay line.
func TestCandidateTimingFlags(t *testing.T) {
	cfg := Config{Store: "redis", CandidateCmd: "/bin/true", FaultTime: 10 * time.Second, TTL: 3 * time.Second,
		RenewInterval: time.Second, RetryInterval: 100 * time.Millisecond, LeaderWork: 0, LeaderWorkSet: true,
		FailoverBound: 7 * time.Second, StoreRoot: t.TempDir()}
	if err := CheckConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	prep, err := prepare(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{cfg: cfg, prep: prep, log: &journal{dir: t.TempDir(), started: time.Now()}, runID: "r1", resource: testResource, cluster: &clusterLease{store: fakeEndpoints{eps: []string{"redis:6379"}}}}
	spec, err := r.candidateSpec("c1", &external{static: true, hostDir: "/x/" + cmdDirName})
	if err != nil {
		t.Fatal(err)
	}
	env := spec.Env
	for k, want := range map[string]string{"SPLITBRAIN_RENEW_INTERVAL": "1s", "SPLITBRAIN_RETRY_INTERVAL": "100ms",
		"SPLITBRAIN_LEADER_WORK": "0s", "SPLITBRAIN_LEASE_TTL": "3s", "PYTHONUNBUFFERED": "1"} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	p := r.checkParams()
	if p.ExpectedFailover.D() != 7*time.Second || p.RetryInterval.D() != 100*time.Millisecond {
		t.Errorf("check params %+v", p)
	}
	for _, want := range []string{"--renew-interval 1s", "--retry-interval 100ms", "--leader-work 0s", "--failover-bound 7s"} {
		if !strings.Contains(r.replayCommand(), want) {
			t.Errorf("replay %q lacks %q", r.replayCommand(), want)
		}
	}
	// Without the flags nothing is passed: the candidate's own defaults apply.
	cfg2 := Config{Store: "redis", CandidateCmd: "/bin/true", FaultTime: 10 * time.Second}
	if err := CheckConfig(&cfg2); err != nil {
		t.Fatal(err)
	}
	r2 := &run{cfg: cfg2, log: &journal{}, resource: testResource, cluster: &clusterLease{store: fakeEndpoints{eps: []string{"redis:6379"}}}}
	if spec, err = r2.candidateSpec("c1", &external{static: true, hostDir: "/x/" + cmdDirName}); err != nil {
		t.Fatal(err)
	}
	env = spec.Env
	for _, k := range []string{"SPLITBRAIN_RENEW_INTERVAL", "SPLITBRAIN_RETRY_INTERVAL", "SPLITBRAIN_LEADER_WORK"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s = %q set without its flag", k, v)
		}
	}
	bad := Config{Store: "redis", CandidateCmd: "/bin/true", FaultTime: time.Second, TTL: time.Second, RenewInterval: time.Second}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "--renew-interval") {
		t.Errorf("renew >= ttl: %v", err)
	}
}

// fakeEndpoints is a stores.Cluster that only knows its endpoints (the spec needs nothing else).
type fakeEndpoints struct {
	stores.Cluster
	eps []string
}

func (f fakeEndpoints) Endpoints() []string { return f.eps }
