package assess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/history/runfile"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
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
	// notes say why saved results were not carried over, for the progress output.
	notes []string
}

// subject is what makes two assessments the same one: a result of another subject, content,
// seed or TTL must not be carried over.
type subject struct {
	Store, Recipe, CandidateCmd, CandidateImage string
	Packages                                    []string
	Seed                                        int64
	TTL                                         time.Duration
	// Content is what the runs execute, by content: harness.CandidateDigest of the candidate
	// command (of the binary built from a Go package directory), the candidate image's id,
	// or for a recipe the digest of this splitbrain executable (the Go recipes are compiled
	// into it, the libraries' adapters embedded). The path or tag alone may name a rebuild.
	Content string
	// The other options that change the runs or their grades.
	Resource      string
	ExploreRuns   int
	NoFencedRerun bool
	Profile       string
	// Steps an external candidate declares (--steps): they decide the zombie window's gap.
	Steps []string `json:",omitempty"`
}

// What the runs execute, fingerprinted; tests replace these.
var (
	imageID = func(ctx context.Context, ref string) (string, error) {
		eng, err := platform.Connect(ctx)
		if err != nil {
			return "", err
		}
		defer eng.Close()
		return eng.ImageID(ctx, ref)
	}
	buildDigest = sync.OnceValues(func() (string, error) {
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		return harness.CandidateDigest(exe)
	})
)

// subjectOf is the subject of o; the error says why its content could not be fingerprinted
// (Content is then empty, and no saved result is trusted).
func subjectOf(ctx context.Context, o Options) (subject, error) {
	s := subject{Store: o.Store, Recipe: o.Recipe, CandidateImage: o.CandidateImage,
		Packages: slices.Clone(o.CandidatePackages), Seed: o.seed(), TTL: o.TTL,
		Resource: o.resource(), ExploreRuns: o.ExploreRuns, NoFencedRerun: o.NoFencedRerun,
		Steps: slices.Clone(o.Steps)}
	if s.TTL == 0 {
		s.TTL = harness.DefaultTTL
	}
	if s.ExploreRuns == 0 {
		s.ExploreRuns = exploreRuns
	}
	if p, err := images.DefaultProfile(); err == nil {
		s.Profile = string(p)
	}
	var err error
	switch {
	case len(o.CandidateCmd) > 0:
		s.CandidateCmd = o.CandidateCmd[0]
		if abs, err := filepath.Abs(s.CandidateCmd); err == nil {
			s.CandidateCmd = abs
		}
		var exe string
		if exe, err = runsExecutable(o); err == nil {
			s.Content, err = harness.CandidateDigest(exe)
		}
	case o.CandidateImage != "":
		s.Content, err = imageID(ctx, o.CandidateImage)
	default:
		s.Content, err = buildDigest()
	}
	return s, err
}

// runsExecutable is what the checks' runs execute for the candidate command: the path
// itself, or for a Go package directory the binary suite builds from it (once a process).
func runsExecutable(o Options) (string, error) {
	p := o.CandidateCmd[0]
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		return p, nil
	}
	checks, err := Plan(o)
	if err != nil {
		return "", err
	}
	k, err := (&runner{opts: o}).caseFor(checks[0])
	if err != nil {
		return "", err
	}
	return k.Config.CandidateCmd, nil
}

// who is what is assessed, where: an out dir holding another one is refused.
func (s subject) who() string {
	switch {
	case s.CandidateCmd != "":
		return "candidate " + s.CandidateCmd + " on " + s.Store
	case s.CandidateImage != "":
		return "image " + s.CandidateImage + " on " + s.Store
	}
	return "recipe " + s.Recipe + " on " + s.Store
}

func (s subject) String() string {
	return fmt.Sprintf("%s, seed %d, TTL %v, packages [%s]", s.who(), s.Seed, s.TTL, strings.Join(s.Packages, ","))
}

// changes says what differs between the saved subject and this one (same who): any
// difference makes the saved results another assessment's.
func changes(old, cur subject, fpErr error) []string {
	var out []string
	what := "candidate"
	switch {
	case cur.CandidateImage != "":
		what = "candidate image"
	case cur.CandidateCmd == "":
		what = "splitbrain build (the recipe's code)"
	}
	switch {
	case fpErr != nil || cur.Content == "":
		out = append(out, fmt.Sprintf("the %s cannot be fingerprinted (%v), so no saved result can be matched to it", what, fpErr))
	case old.Content == "":
		// Written before the state was bound to content: the options below were not saved either.
		return []string{"the saved state holds no fingerprint of the " + what + "; an older splitbrain wrote it"}
	case old.Content != cur.Content:
		out = append(out, fmt.Sprintf("the %s changed since the saved state (%s → %s)", what, shortDigest(old.Content), shortDigest(cur.Content)))
	}
	diff := func(name string, a, b any) {
		if a != b {
			out = append(out, fmt.Sprintf("%s changed since the saved state (%v → %v)", name, a, b))
		}
	}
	diff("--candidate-packages", strings.Join(old.Packages, ","), strings.Join(cur.Packages, ","))
	diff("--steps", strings.Join(old.Steps, ","), strings.Join(cur.Steps, ","))
	diff("--seed", old.Seed, cur.Seed)
	diff("--ttl", old.TTL, cur.TTL)
	diff("--resource", old.Resource, cur.Resource)
	diff("--explore-runs", old.ExploreRuns, cur.ExploreRuns)
	diff("the fenced reruns' setting", !old.NoFencedRerun, !cur.NoFencedRerun)
	diff("the image profile ($"+images.EnvProfile+")", old.Profile, cur.Profile)
	return out
}

// shortDigest is a digest for a reader: "sha256 3f2a1b4c5d6e".
func shortDigest(d string) string {
	if d == "" {
		return "none"
	}
	algo, hex, ok := strings.Cut(d, ":")
	if !ok {
		return d
	}
	return algo + " " + hex[:min(12, len(hex))]
}

// loadState reads the out dir's state, or starts an empty one. A state of another candidate
// or store is refused: its scorecard is not this one's to overwrite. A state of the same one
// whose content or run options changed is set aside (this assessment starts over), and a
// saved result is carried over only when its run directory confirms it (confirm).
func loadState(ctx context.Context, o Options) (*state, error) {
	cur, fpErr := subjectOf(ctx, o)
	st := &state{path: filepath.Join(o.OutDir, StateFile), Subject: cur, Results: map[string]CheckResult{}}
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
	if old.Subject.who() != cur.who() {
		return nil, fmt.Errorf("assess: %s holds an assessment of %s, not of %s: give another out directory, or remove %s to start over (%w)",
			o.OutDir, old.Subject, cur, st.path, errStateMismatch)
	}
	if why := changes(old.Subject, cur, fpErr); len(why) > 0 {
		st.notes = append(st.notes, strings.Join(why, "; ")+": starting over (the earlier runs stay under "+filepath.Join(o.OutDir, RunsDir)+")")
		return st, nil
	}
	st.Spent, st.Invocations = old.Spent, old.Invocations
	for _, k := range slices.Sorted(maps.Keys(old.Results)) {
		r := old.Results[k]
		if !r.Done() {
			continue
		}
		if why := confirm(&r, o.OutDir); why != "" {
			st.notes = append(st.notes, fmt.Sprintf("%s: the saved verdict %s is not carried over (%s): it runs again", k, r.Verdict, why))
			continue
		}
		st.Results[k] = r
	}
	return st, nil
}

// confirm checks a saved result against its run directory, the source of truth, and says
// why it cannot be trusted: the directory is outside the out dir's runs, missing, holds no
// readable results.json, or its verdict is another. An invalid result is judged again from
// it (a state written before Unfenceable or the zombie rule existed).
func confirm(r *CheckResult, outDir string) string {
	if r.RunDir == "" {
		return "no run directory was recorded"
	}
	runs, err1 := filepath.Abs(filepath.Join(outDir, RunsDir))
	dir, err2 := filepath.Abs(r.RunDir)
	rel, err3 := filepath.Rel(runs, dir)
	if err := errors.Join(err1, err2, err3); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Sprintf("its run directory %s is not under %s", r.RunDir, runs)
	}
	results, err := checkers.ReadResults(filepath.Join(r.RunDir, checkers.ResultsFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Stat(r.RunDir); serr != nil {
			return fmt.Sprintf("its run directory %s is missing", r.RunDir)
		}
		return fmt.Sprintf("its run directory %s holds no %s", r.RunDir, checkers.ResultsFile)
	case err != nil:
		return fmt.Sprintf("its %s is not readable: %v", checkers.ResultsFile, err)
	}
	// An inconclusive explore check points at one of its tries, whose verdict may differ.
	if v := string(results.Verdict); v != r.Verdict && !(r.Check.Explore && r.Reason == reasonExploreInconclusive) {
		return fmt.Sprintf("its run directory %s says %s", r.RunDir, v)
	}
	if r.Verdict == harness.VerdictInvalid {
		r.Unfenceable = unfenceableReasons(results)
		applyZombie(r, zombieOf(results))
	}
	return ""
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
