package assess

import (
	"errors"
	"path/filepath"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

// Preflight checks, without starting anything, what would otherwise fail every check one by
// one as a harness error: the options, the candidate (a Go package directory is built here,
// and a failed build is reported with go build's output), the first check's run
// configuration through harness.CheckConfig, as `splitbrain run` checks its own (the TTL,
// the candidate command's file, the store), and the out directory's files, which are
// replaced by rename. `splitbrain assess` exits 64 on its error.
func Preflight(opts Options) error {
	checks, _, err := PlanWithSkips(opts)
	if err != nil {
		return err
	}
	r := &runner{opts: opts}
	c := checks[0]
	if len(opts.CandidateCmd) == 1 {
		if _, err := r.row(c).BuildCandidate(""); err != nil {
			return err // it names the directory and go build's output
		}
	}
	if c.Explore && c.Fault == "" {
		// The explore check's runs start from its configuration without faults.
		c.Explore, c.Fault, c.Paced, c.Until = false, "none", false, ""
	}
	k, err := r.caseFor(c)
	if err != nil {
		return err
	}
	var errs []error
	if err := harness.CheckConfig(&k.Config); err != nil {
		errs = append(errs, err)
	}
	for _, name := range []string{StateFile, ScorecardJSON, ScorecardHTML, ScorecardJUnit} {
		if err := runfile.CheckReplaceable(filepath.Join(opts.OutDir, name)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
