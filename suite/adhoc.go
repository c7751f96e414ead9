package suite

import (
	"errors"
	"fmt"
)

// CaseOf turns a row that lives outside the matrix file (assess builds its battery from rows)
// into a runnable case with the matrix's own rules: the row is validated as a matrix row would
// be, its timing is layered over def (then the harness defaults), an event-paced profile runs
// def.Cycles cycles, and failover_max: derived is resolved. A row's candidate: may be an
// absolute path or one relative to the working directory; a Go package directory is built
// static as for the matrix.
func CaseOf(r Row, def Timing, seed int64) (Case, error) {
	m := &Matrix{Defaults: Defaults{Timing: def}, Source: "assess"}
	if r.Fault == "" {
		r.Fault = "none"
	}
	if len(r.Tags) == 0 {
		r.Tags = []string{TierDefault}
	}
	if errs := append(r.check(m.Defaults), r.checkCandidate("")...); len(errs) > 0 {
		return Case{}, fmt.Errorf("%s: %w", r.FullName(m.Defaults), errors.Join(errs...))
	}
	t := m.resolve(TierDefault, r.Timing)
	t.Seeds = []int64{seed}
	c := Case{Name: r.FullName(m.Defaults), Row: r, Tier: TierDefault, Seed: seed, Timing: t, Config: m.config(r, t, seed)}
	if r.Candidate != "" { // assess runs k.Config itself: the candidate is built here
		c.Config.CandidateCmd = c.BuildCandidate()
	}
	if r.Expect.FailoverMaxSpec == BoundDerived {
		b, err := DerivedBound(c.Config)
		if err != nil {
			return Case{}, fmt.Errorf("%s: failover_max derived: %w", c.Name, err)
		}
		c.Row.Expect.FailoverMax = b
	}
	return c, nil
}
