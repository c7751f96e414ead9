package suite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/reports"
)

// JUnitFile is the matrix JUnit document at the store root: one testcase per row, failing
// when the outcome differs from the expectation (an expected invalid verdict passes).
const JUnitFile = "junit.xml"

// IndexFile is the store-wide index the reports package writes.
const IndexFile = "index.html"

// StoreRoot resolves the store directory the way harness.Run does.
func StoreRoot(root string) string {
	if root == "" {
		root = os.Getenv(harness.EnvStoreDir)
	}
	if root == "" {
		root = harness.DefaultStoreRoot
	}
	return root
}

// Publish renders each run's report, the matrix JUnit and the store index. Rendering
// problems are returned joined; the verdicts stand either way.
func Publish(storeRoot string, rs []Result) (junitPath string, err error) {
	storeRoot = StoreRoot(storeRoot)
	var errs []error
	for _, r := range rs {
		if r.Outcome == nil || r.Outcome.RunDir == "" {
			continue
		}
		if _, statErr := os.Stat(filepath.Join(r.Outcome.RunDir, harness.ResultsFile)); statErr != nil {
			continue // nothing to render: the run never got to checking
		}
		if rerr := reports.RenderRun(r.Outcome.RunDir); rerr != nil {
			errs = append(errs, fmt.Errorf("report of %s: %w", r.Case.Name, rerr))
		}
	}
	junitPath = filepath.Join(storeRoot, JUnitFile)
	if jerr := WriteJUnit(junitPath, "splitbrain-matrix", rs); jerr != nil {
		errs = append(errs, fmt.Errorf("junit: %w", jerr))
	}
	if ierr := renderIndex(storeRoot); ierr != nil {
		errs = append(errs, fmt.Errorf("index: %w", ierr))
	}
	return junitPath, errors.Join(errs...)
}
