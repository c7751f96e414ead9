package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	r := &run{cfg: cfg, prep: prep, dir: t.TempDir(), runID: "r1", started: time.Now()}
	if err := r.writeConfig(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(r.dir, ConfigFile))
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
	rc, err := ReadRunConfig(r.dir)
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
	}
	for _, tc := range cases {
		c := Config{Store: "etcd", Recipe: "etcd-election", FaultTime: time.Second}
		tc.mod(&c)
		err := CheckConfig(&c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	c := Config{Store: "etcd", Recipe: "etcd-election", FaultTime: time.Second}
	if err := CheckConfig(&c); err != nil || c.Seed == 0 {
		t.Errorf("valid config: %v, seed %d", err, c.Seed)
	}
}
