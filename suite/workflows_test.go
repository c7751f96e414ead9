package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The workflows run only on GitHub; these checks keep them running the same commands as
// the Makefile's entry points (actionlint in `make vet` checks their syntax).

type step struct {
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	If   string            `yaml:"if"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

type job struct {
	Needs    any               `yaml:"needs"`
	If       string            `yaml:"if"`
	Outputs  map[string]string `yaml:"outputs"`
	Strategy struct {
		FailFast *bool          `yaml:"fail-fast"`
		Matrix   map[string]any `yaml:"matrix"`
	} `yaml:"strategy"`
	Steps []step `yaml:"steps"`
}

type workflow struct {
	On   map[string]any `yaml:"on"`
	Jobs map[string]job `yaml:"jobs"`
}

func loadWorkflow(t *testing.T, name string) workflow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", ".github", "workflows", name))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(w.Jobs) == 0 {
		t.Fatalf("%s: no jobs", name)
	}
	return w
}

// The nightly fans out: a plan job lists the shards, one runner per shard runs `make nightly`
// with SHARD=I/N and uploads its store, and a merge job (also after failed shards) merges the
// stores it downloads and publishes the merged index and JUnit.
func TestNightlyWorkflowShardsAndMerges(t *testing.T) {
	w := loadWorkflow(t, "nightly.yml")
	if _, ok := w.On["schedule"]; !ok {
		t.Error("nightly.yml: no schedule trigger")
	}
	plan, shard, merge := w.Jobs["plan"], w.Jobs["shard"], w.Jobs["merge"]
	if plan.Outputs["shards"] == "" || plan.Outputs["count"] == "" {
		t.Error("nightly.yml: the plan job must output the shard list and count")
	}
	if m := fmt.Sprint(shard.Strategy.Matrix["shard"]); !strings.Contains(m, "needs.plan.outputs.shards") {
		t.Errorf("nightly.yml: the shard job's matrix is %q, want it from needs.plan.outputs.shards", m)
	}
	if shard.Strategy.FailFast == nil || *shard.Strategy.FailFast {
		t.Error("nightly.yml: shards must not cancel each other (fail-fast: false): every row's outcome is wanted")
	}
	var runsShard, uploadsShard bool
	uploadName := ""
	for _, s := range shard.Steps {
		if strings.Contains(s.Run, "make nightly") && strings.Contains(s.Run, "SHARD") &&
			strings.Contains(s.Env["SHARD"], "matrix.shard") && strings.Contains(s.Env["SHARD"], "needs.plan.outputs.count") {
			runsShard = true
		}
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") && s.With["path"] == "store/" && s.If == "always()" {
			uploadsShard, uploadName = true, s.With["name"]
		}
	}
	if !runsShard || !uploadsShard {
		t.Errorf("nightly.yml shard job: runs make nightly with SHARD=matrix.shard/count %v, uploads store/ always %v", runsShard, uploadsShard)
	}
	var downloads, merges, publishes bool
	for _, s := range merge.Steps {
		if strings.HasPrefix(s.Uses, "actions/download-artifact@") && s.With["path"] == "shards/" &&
			strings.HasPrefix(uploadName, strings.TrimSuffix(s.With["pattern"], "*")) {
			downloads = true
		}
		if strings.Contains(s.Run, "splitbrain report --merge store shards/*") {
			merges = true
		}
		if strings.Contains(s.With["report_paths"], "store/junit.xml") && s.If == "always()" {
			publishes = true
		}
	}
	if merge.If != "always()" || fmt.Sprint(merge.Needs) != "shard" || !downloads || !merges || !publishes {
		t.Errorf("nightly.yml merge job: always after shard %v, downloads the shard artifacts %v, merges %v, publishes store/junit.xml %v",
			merge.If == "always()" && fmt.Sprint(merge.Needs) == "shard", downloads, merges, publishes)
	}
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "matrix --tags nightly") || !strings.Contains(string(mk), "--shard $(SHARD)") {
		t.Error("Makefile: the nightly target must run `matrix --tags nightly`, with --shard $(SHARD) when SHARD is set")
	}
}

// No workflow names a mirror: the Debian mirror comes from a repository variable.
func TestWorkflowsNameNoMirror(t *testing.T) {
	for _, name := range []string{"nightly.yml", "test.yml"} {
		w := loadWorkflow(t, name)
		for jn, j := range w.Jobs {
			for _, s := range j.Steps {
				if v, ok := s.Env["SPLITBRAIN_DEBIAN_MIRROR"]; ok && v != "${{ vars.SPLITBRAIN_DEBIAN_MIRROR }}" {
					t.Errorf("%s job %s: SPLITBRAIN_DEBIAN_MIRROR is %q, want the repository variable", name, jn, v)
				}
			}
		}
	}
}

func TestPushWorkflowRunsTheTestCommand(t *testing.T) {
	w := loadWorkflow(t, "test.yml")
	if _, ok := w.On["push"]; !ok {
		t.Error("test.yml: no push trigger")
	}
	found := false
	for _, job := range w.Jobs {
		for _, s := range job.Steps {
			if strings.Contains(s.Run, "make test") && s.Env["CI"] == "true" {
				found = true
			}
		}
	}
	if !found {
		t.Error("test.yml: no step runs `make test` with CI=true (the README's test command, smoke tier)")
	}
}

// `make test` runs the unit tests only inside the chaos build (-tags chaos), which is complete
// only while no file is excluded by that tag. A `//go:build !chaos` file would silently drop out.
func TestChaosBuildHasEveryUnitTest(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "store" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "//go:build") && strings.Contains(line, "!chaos") {
				t.Errorf("%s: %q excludes it from `go test -tags chaos`, the only run of its tests in `make test`", path, line)
			}
			if strings.HasPrefix(line, "package ") {
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^test: .*chaos-test`).Match(mk) || !regexp.MustCompile(`(?m)^\t(set -o pipefail; )?\$\(GO\) test .*-tags chaos .*\./\.\.\.( \| \S+ .*)?$`).Match(mk) {
		t.Error("Makefile: `test` must run chaos-test, which runs `go test ... -tags chaos ... ./...`")
	}
}
