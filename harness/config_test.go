package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	return Config{Store: "etcd", Recipe: "etcd-election", FaultTime: 10 * time.Second}
}

func TestValidateFillsDefaults(t *testing.T) {
	t.Setenv(EnvStoreDir, "")
	t.Setenv("SPLITBRAIN_IMAGE_PROFILE", "")
	c := validConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if c.Nodes != DefaultNodes || c.TTL != DefaultTTL || c.WriteInterval != DefaultWriteInterval ||
		c.Warmup != DefaultWarmup || c.Recovery != DefaultRecovery || c.Workload != "steady" ||
		c.ResourceMode != "fenced" || c.Nemesis != "none" || c.Profile != "local" || c.StoreRoot != "store" {
		t.Fatalf("defaults not filled: %+v", c)
	}
	if c.TestName != "etcd-etcd-election-none" {
		t.Fatalf("test name %q", c.TestName)
	}
	if got, want := c.TotalTime(), DefaultWarmup+10*time.Second+DefaultRecovery; got != want {
		t.Fatalf("TotalTime %v, want %v", got, want)
	}
}

func TestValidateStoreRootFromEnv(t *testing.T) {
	t.Setenv(EnvStoreDir, "/tmp/x")
	c := validConfig()
	if err := c.Validate(); err != nil || c.StoreRoot != "/tmp/x" {
		t.Fatalf("StoreRoot %q err %v", c.StoreRoot, err)
	}
	c = validConfig()
	c.StoreRoot = "/explicit"
	if err := c.Validate(); err != nil || c.StoreRoot != "/explicit" {
		t.Fatalf("explicit root overridden: %q", c.StoreRoot)
	}
}

func TestValidateRejects(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "cand")
	if err := os.WriteFile(exe, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no store", func(c *Config) { c.Store = "" }, "no store given"},
		{"unknown store", func(c *Config) { c.Store = "mysql" }, `unknown store "mysql"`},
		{"no candidate", func(c *Config) { c.Recipe = "" }, "no candidate given"},
		{"both candidates", func(c *Config) { c.CandidateCmd, c.CandidateImage = "/bin/true", "img" }, "exclude each other"},
		{"missing cmd", func(c *Config) { c.CandidateCmd = "/nonexistent/cand" }, "does not exist"},
		{"not executable", func(c *Config) { c.CandidateCmd = exe }, "not executable"},
		{"no time", func(c *Config) { c.FaultTime = 0 }, "--time"},
		{"too many nodes", func(c *Config) { c.Nodes = 99 }, "--nodes 99"},
		{"negative nodes", func(c *Config) { c.Nodes = -1 }, "--nodes -1"},
		{"negative warmup", func(c *Config) { c.Warmup = -time.Second }, "--warmup"},
		{"negative ttl", func(c *Config) { c.TTL = -time.Second }, "--ttl"},
		{"resource mode", func(c *Config) { c.ResourceMode = "half" }, `--resource "half"`},
		{"profile", func(c *Config) { c.Profile = "cloud" }, `unknown image profile "cloud"`},
		{"require", func(c *Config) { c.Require = []string{"speed"} }, `--require "speed"`},
		{"test name", func(c *Config) { c.TestName = "../up" }, "test name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestValidateReportsAllProblems(t *testing.T) {
	c := Config{Store: "mysql", ResourceMode: "x"}
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"unknown store", "no candidate", "--time", "--resource"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestCandidateCmdLabel(t *testing.T) {
	c := Config{Store: "redis", CandidateCmd: "/bin/true", FaultTime: time.Second, Nemesis: "pause:target=leader,for=6s"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.TestName != "redis-cmd-true-pause-target-leader-for-6s" {
		t.Fatalf("test name %q", c.TestName)
	}
}

func TestDefaultTestName(t *testing.T) {
	cases := []struct{ store, recipe, nem, want string }{
		{"etcd", "etcd-election", "", "etcd-etcd-election-none"},
		{"redis", "redis-setnx", "pause-leader", "redis-redis-setnx-pause-leader"},
		{"zookeeper", "zookeeper-seq", "pause:target=leader;kill:target=store-leader", "zookeeper-zookeeper-seq-pause-target-leader-kill-target-store-leader"},
		{"Redis", "X", "@/tmp/../f.txt", "redis-x-tmp-..-f.txt"},
		{"", "", "///", "run"},
	}
	for _, tc := range cases {
		got := DefaultTestName(tc.store, tc.recipe, tc.nem)
		if got != tc.want {
			t.Errorf("DefaultTestName(%q,%q,%q) = %q, want %q", tc.store, tc.recipe, tc.nem, got, tc.want)
		}
		if !testNamePattern.MatchString(got) || got == ".." || got == "." {
			t.Errorf("%q is not a safe directory name", got)
		}
	}
	long := DefaultTestName("etcd", strings.Repeat("r", 300), "none")
	if len(long) > 100 {
		t.Errorf("long name not cut: %d chars", len(long))
	}
}

func TestClockFileOutsideBinaryPath(t *testing.T) {
	if strings.HasPrefix(candidateClockFile, "/splitbrain/") || candidateClockFile == "/splitbrain" {
		t.Fatalf("clock file %s cannot exist in the candidate image, whose binary is /splitbrain", candidateClockFile)
	}
}
