package assess

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/runfile"
)

// StateFile holds the finished checks of an assessment in its out dir: a second invocation
// with the same out dir and the same subject skips them (resume after an interrupt).
const StateFile = "assess-state.json"

// state is the resume file: what was assessed and every finished result by check key.
type state struct {
	path    string
	Subject subject                `json:"subject"`
	Results map[string]CheckResult `json:"results"`
	// Spent is the wall time of every invocation so far (a resumed assessment adds its own).
	Spent       time.Duration `json:"spent"`
	Invocations int           `json:"invocations"`
}

// subject is what makes two assessments the same one: a result of another subject, seed or
// TTL must not be carried over.
type subject struct {
	Store, Recipe, CandidateCmd, CandidateImage string
	Packages                                    []string
	Seed                                        int64
	TTL                                         time.Duration
}

func subjectOf(o Options) subject {
	s := subject{Store: o.Store, Recipe: o.Recipe, CandidateImage: o.CandidateImage,
		Packages: slices.Clone(o.CandidatePackages), Seed: o.seed(), TTL: o.TTL}
	if len(o.CandidateCmd) > 0 {
		s.CandidateCmd = o.CandidateCmd[0]
		if abs, err := filepath.Abs(s.CandidateCmd); err == nil {
			s.CandidateCmd = abs
		}
	}
	return s
}

func (s subject) String() string {
	who := "recipe " + s.Recipe
	switch {
	case s.CandidateCmd != "":
		who = "candidate " + s.CandidateCmd
	case s.CandidateImage != "":
		who = "image " + s.CandidateImage
	}
	return fmt.Sprintf("%s on %s, seed %d, TTL %v, packages [%s]", who, s.Store, s.Seed, s.TTL, strings.Join(s.Packages, ","))
}

// loadState reads the out dir's state, or starts an empty one. A state of another subject
// is refused: its results would be mixed into this scorecard.
func loadState(o Options) (*state, error) {
	st := &state{path: filepath.Join(o.OutDir, StateFile), Subject: subjectOf(o), Results: map[string]CheckResult{}}
	// Bounded and non-blocking: a FIFO there hung the assessment, /dev/zero exhausted memory.
	b, err := runfile.ReadInput(st.path, runfile.MaxJSON)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("assess: resume state: %w; remove it to start over, or give another out directory", err)
	}
	var old state
	if err := json.Unmarshal(b, &old); err != nil {
		return nil, fmt.Errorf("assess: resume state %s is not readable (%v): remove it to start over, or give another out directory", st.path, err)
	}
	if !slices.Equal(old.Subject.Packages, st.Subject.Packages) || old.Subject.Store != st.Subject.Store ||
		old.Subject.Recipe != st.Subject.Recipe || old.Subject.CandidateCmd != st.Subject.CandidateCmd ||
		old.Subject.CandidateImage != st.Subject.CandidateImage || old.Subject.Seed != st.Subject.Seed || old.Subject.TTL != st.Subject.TTL {
		return nil, fmt.Errorf("assess: %s holds an assessment of %s, not of %s: give another out directory, or remove %s to start over (%w)",
			o.OutDir, old.Subject, st.Subject, st.path, errStateMismatch)
	}
	st.Spent, st.Invocations = old.Spent, old.Invocations
	for k, r := range old.Results {
		if r.done() {
			if r.Verdict == harness.VerdictInvalid && r.RunDir != "" {
				// The run directory is the source of truth: a state written before
				// Unfenceable or the zombie rule existed is judged again from it.
				if results, err := checkers.ReadResults(filepath.Join(r.RunDir, checkers.ResultsFile)); err == nil {
					r.Unfenceable = unfenceableReasons(results)
					applyZombie(&r, zombieOf(results))
				}
			}
			st.Results[k] = r
		}
	}
	return st, nil
}

// unfenceableReasons are a run's invalid reasons no fence prevents.
func unfenceableReasons(results *checkers.Results) []string {
	var out []string
	for _, x := range results.Reasons {
		if x.Severity == checkers.SevInvalid && !slices.Contains(fenceable, x.Code) {
			out = appendNew(out, x.Code)
		}
	}
	return out
}

// save writes the state atomically (a kill mid-write leaves the previous one).
func (s *state) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(s.path, b)
}

// writeAtomic replaces path through a temporary file of its own (two writers never share
// one) and refuses to replace anything but a regular file.
func writeAtomic(path string, b []byte) error { return runfile.WriteFile(path, b, 0o644) }
