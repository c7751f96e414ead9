package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The workflows run only on GitHub; these checks keep them running the same commands as
// the Makefile's entry points (actionlint in `make vet` checks their syntax).

type workflow struct {
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			If   string            `yaml:"if"`
			With map[string]string `yaml:"with"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
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
	if len(w.Jobs) != 1 {
		t.Fatalf("%s: want one job, got %d", name, len(w.Jobs))
	}
	return w
}

func TestNightlyWorkflowRunsFullMatrix(t *testing.T) {
	w := loadWorkflow(t, "nightly.yml")
	if _, ok := w.On["schedule"]; !ok {
		t.Error("nightly.yml: no schedule trigger")
	}
	var runsNightly, uploadsStore, publishesJUnit bool
	for _, job := range w.Jobs {
		for _, s := range job.Steps {
			if strings.Contains(s.Run, "make nightly") {
				runsNightly = true
			}
			if strings.HasPrefix(s.Uses, "actions/upload-artifact@") && s.With["path"] == "store/" && s.If == "always()" {
				uploadsStore = true
			}
			if strings.Contains(s.With["report_paths"], "store/junit.xml") && s.If == "always()" {
				publishesJUnit = true
			}
		}
	}
	if !runsNightly || !uploadsStore || !publishesJUnit {
		t.Errorf("nightly.yml: runs make nightly %v, uploads store/ always %v, publishes store/junit.xml always %v",
			runsNightly, uploadsStore, publishesJUnit)
	}
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "matrix --tags nightly") {
		t.Error("Makefile: the nightly target no longer runs `matrix --tags nightly`")
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
