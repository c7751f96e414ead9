// Package splitbraintest assesses an election candidate from a user's own `go test`: one call
// plans splitbrain's battery for the candidate's store (docs/assess.md) and runs every check as
// a subtest on real store servers in containers with real faults, failing a check's subtest
// with its explanation and the path of its run report.
//
//	//go:build chaos
//
//	func TestElection(t *testing.T) {
//		bin := splitbraintest.BuildGo(t, ".")
//		splitbraintest.Assess(t, splitbraintest.Candidate{Cmd: bin, Store: "etcd"})
//	}
//
// Run it with `go test -tags chaos ./...`; -short runs the short battery. It needs a Docker
// engine (`make deps` in a splitbrain clone starts one) and builds the images a check needs
// offline, as `splitbrain run` does. examples/gotest-user is a module that uses it.
//
// The name follows Go's convention for a package of test helpers for another (httptest,
// fstest): what it helps test is the user's code, against splitbrain.
package splitbraintest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/assess"
	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// Candidate is what is assessed and where: exactly one of Cmd, Image or Recipe, on Store.
type Candidate struct {
	// Store is the store the candidate elects on: etcd, zookeeper, postgres, redis, ...
	// (docs/stores.md), or none for a store-less protocol.
	Store string
	// Cmd is a host executable speaking the candidate contract (docs/candidates.md); each
	// run mounts a copy read-only into its candidate containers. A Go candidate must be
	// static: see BuildGo.
	Cmd string
	// Packages are Debian packages a Cmd script needs (python3, python3-redis, curl, ...).
	Packages []string
	// Image is an image in the local Docker engine whose entrypoint speaks the contract.
	Image string
	// Recipe is one of splitbrain's built-in recipes instead of a candidate of your own.
	Recipe string
}

// Option tunes Assess.
type Option func(*settings)

type settings struct {
	budget    time.Duration
	budgetSet bool
	dir       string
	checks    []string
	seed      int64
	short     *bool
	unfenced  bool
}

// Budget bounds the time of the whole battery (image builds before it excluded). It must fit
// in what is left of go test's -timeout; without it the battery's default budget is used,
// lowered to fit the -timeout.
func Budget(d time.Duration) Option { return func(s *settings) { s.budget, s.budgetSet = d, true } }

// Dir keeps the scorecard (scorecard.html, .json, junit.xml) and every check's run directory
// in dir, whatever the outcome. Without it, $SPLITBRAIN_SCORECARD_DIR (EnvDir) is used when
// set (a CI job keeps it as an artifact); else a fresh directory under os.TempDir that is
// removed when every check passed and kept (its path logged) when one failed.
func Dir(dir string) Option { return func(s *settings) { s.dir = dir } }

// Checks runs only the named checks of the battery (the names of its subtests).
func Checks(names ...string) Option {
	return func(s *settings) { s.checks = append(s.checks, names...) }
}

// Short picks the short battery (true) or the full one (false) whatever -short says.
func Short(short bool) Option { return func(s *settings) { s.short = &short } }

// Unfenced judges the candidate on the unfenced resource: say so when the resource your
// leader writes to does not check fencing tokens. A check the candidate passes only because
// the fence rejected a stale write then fails. By default the resource is fenced, as
// `splitbrain run` assumes.
func Unfenced() Option { return func(s *settings) { s.unfenced = true } }

// Seed fixes the seed the checks draw their randomness from, to repeat an assessment.
func Seed(seed int64) Option { return func(s *settings) { s.seed = seed } }

// EnvDir names the environment variable that stands in for Dir when Dir is not given.
const EnvDir = "SPLITBRAIN_SCORECARD_DIR"

// cleanupMargin is left of go test's -timeout after the budget and after the checks'
// context ends: a run's heal and teardown (every fault healed, every container removed; each
// bounded at 2 minutes by the harness, seconds when nothing is stuck), the store clusters'
// removal and writing the scorecard.
const cleanupMargin = 3 * time.Minute

// checksContext is what the checks run under. It ends cleanupMargin before go test's
// deadline, so a run still going is torn down before the -timeout panic kills the binary,
// and on SIGINT or SIGTERM, so an interrupted go test tears down too (Ryuk is off: nothing
// else would remove the containers). After the first signal a second one kills at once.
func checksContext(deadline time.Time, hasDeadline bool) (context.Context, context.CancelFunc) {
	sctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	unwatch := context.AfterFunc(sctx, stop)
	ctx, cancel := sctx, context.CancelFunc(func() {})
	if hasDeadline {
		ctx, cancel = context.WithDeadline(sctx, deadline.Add(-cleanupMargin))
	}
	return ctx, func() { cancel(); unwatch(); stop() }
}

// logStarted logs each run and store cluster id as it starts, with the command that removes
// it if go test is killed before the checks could clean up.
func logStarted(progress io.Writer) func(what, id string) {
	return func(what, id string) {
		fmt.Fprintf(progress, "splitbraintest: %s %s started (if go test is killed, remove it with: splitbrain clean --run %s)\n", what, id, id)
	}
}

// Assess plans the battery for c and runs each check as a subtest t.Run(check.Name, ...). A
// check passes only when the candidate was judged safe under it; an unsafe or unknown
// verdict, a harness error, or a check that did not run because the budget was spent fails
// its subtest (a check that never ran proved nothing, so it is a failure, never a skip that
// would leave `go test` green). Failures carry the check's reason, its one-line explanation
// and the path of its report.html. -short runs the short battery. The scorecard is written
// when every check has run (see Dir) and returned.
func Assess(t *testing.T, c Candidate, opts ...Option) *assess.Scorecard {
	t.Helper()
	var s settings
	for _, o := range opts {
		o(&s)
	}
	if err := c.validate(true); err != nil {
		t.Fatalf("splitbraintest: %v", err)
	}
	dl, hasDeadline := t.Deadline()
	ctx, cancel := checksContext(dl, hasDeadline)
	defer cancel()

	progress := &lineLogger{}
	progress.attach(t)
	defer progress.detach()
	needEngine(ctx, t)
	if err := ensureSplitbrainBinary(); err != nil {
		t.Fatalf("splitbraintest: %v", err)
	}

	ao := options(c, s)
	ao.Progress = progress
	ao.Started = logStarted(progress)
	ao.OutDir = outDir(t, s.dir)
	session, checks, err := assess.NewSession(ao)
	if err != nil {
		t.Fatalf("splitbraintest: %v", err)
	}
	closed := false
	defer func() {
		if !closed { // a Fatal before the end: still stop the store clusters
			session.Close(context.WithoutCancel(ctx))
		}
	}()
	ensureImages(ctx, t, session, ao.OutDir)

	budget := session.Budget()
	note, err := fitBudget(&budget, s.budgetSet, dl, hasDeadline, time.Now())
	if err != nil {
		t.Fatalf("splitbraintest: %v", err)
	}
	if note != "" {
		t.Logf("splitbraintest: %s", note)
	}
	session.SetBudget(budget)
	t.Logf("splitbraintest: %d checks for %s on %s, budget %v, scorecard in %s", len(checks), c.desc(), c.Store, budget.Round(time.Second), ao.OutDir)
	parent := t
	for _, chk := range checks {
		t.Run(chk.Name, func(t *testing.T) {
			progress.attach(t)
			defer progress.attach(parent)
			g, err := session.Check(ctx, chk)
			if err != nil {
				t.Errorf("harness error: %v", err)
			}
			if g.Verdict != harness.VerdictValid {
				t.Errorf("%s", failure(g, ao))
				return
			}
			t.Logf("%s", passLine(g))
		})
	}
	closed = true
	sc, err := session.Close(ctx)
	if err != nil {
		t.Errorf("splitbraintest: scorecard: %v", err)
	}
	if sc != nil {
		t.Logf("splitbraintest: %s\nscorecard: %s", sc.Summary, filepath.Join(ao.OutDir, assess.ScorecardHTML))
	}
	return sc
}

// ShortBattery is the battery under -short (or Short(true)): the checks that catch the
// commonest mistakes in the least time: a token that does not grow across leaders (handoff),
// a lease that never frees (kill-leader), a zombie leader writing after a pause longer than
// its lease (pause-leader). Checks(...) overrides it. A check that fails unfenced with a
// stale write is rerun fenced: a candidate that relies on its fencing token passes where
// the fence saves it; a violation no fence prevents (a duplicate token, a leader that
// never steps down) fails at once.
var ShortBattery = []string{"handoff", "pause-leader", "kill-leader"}

// options are the assessment's options for c, without output and budget fitting.
func options(c Candidate, s settings) assess.Options {
	o := assess.Options{
		Store:             c.Store,
		Recipe:            c.Recipe,
		CandidateImage:    c.Image,
		CandidatePackages: c.Packages,
		Checks:            s.checks,
		Seed:              s.seed,
		Budget:            s.budget,
	}
	if s.unfenced {
		o.Resource = assess.ResourceUnfenced
	}
	short := testing.Short()
	if s.short != nil {
		short = *s.short
	}
	if short && len(o.Checks) == 0 {
		o.Checks = ShortBattery
	}
	if c.Cmd != "" {
		o.CandidateCmd = []string{c.Cmd}
	}
	return o
}

// Plan lists the checks Assess would run for c with these options, in order, without
// running anything (no Docker needed): their names are the subtests' names.
func Plan(c Candidate, opts ...Option) ([]assess.Check, error) {
	var s settings
	for _, o := range opts {
		o(&s)
	}
	if err := c.validate(false); err != nil {
		return nil, err
	}
	o := options(c, s)
	o.OutDir = os.TempDir() // planning writes nothing; assess wants a directory named
	return assess.Plan(o)
}

// validate names what is wrong with c and how to fix it.
func (c Candidate) validate(checkFiles bool) error {
	var problems []string
	if c.Store == "" {
		problems = append(problems, "Candidate.Store is empty: name the store the candidate elects on (etcd, zookeeper, postgres, redis, ..., or none)")
	}
	n := 0
	for _, v := range []string{c.Cmd, c.Image, c.Recipe} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		problems = append(problems, fmt.Sprintf("set exactly one of Candidate.Cmd, Candidate.Image or Candidate.Recipe (%d set)", n))
	}
	if len(c.Packages) > 0 && c.Cmd == "" {
		problems = append(problems, "Candidate.Packages needs Candidate.Cmd: they are installed beside a host executable")
	}
	if c.Cmd != "" && checkFiles {
		if fi, err := os.Stat(c.Cmd); err != nil {
			problems = append(problems, fmt.Sprintf("Candidate.Cmd: %v", err))
		} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
			problems = append(problems, fmt.Sprintf("Candidate.Cmd %s is not an executable file (chmod +x it, or build it with BuildGo)", c.Cmd))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func (c Candidate) desc() string {
	switch {
	case c.Cmd != "":
		return filepath.Base(c.Cmd)
	case c.Image != "":
		return "image " + c.Image
	}
	return "recipe " + c.Recipe
}

// needEngine fails the test once, saying what to run, when no Docker engine answers.
func needEngine(ctx context.Context, t *testing.T) {
	t.Helper()
	eng, err := platform.Connect(ctx)
	if err != nil {
		t.Fatalf("splitbraintest: %v\nThe checks run real servers in containers: start a Docker engine (`make deps` in a splitbrain clone runs scripts/ensure-docker.sh, which installs and starts Debian's docker.io as root), or point DOCKER_HOST at one.", err)
	}
	eng.Close()
}

// ensureImages builds the images the checks need before the first one, as `splitbrain run`
// does, failing the test once with what to run when it cannot. The build output goes to
// images.log in the output directory, its progress lines to the test log.
func ensureImages(ctx context.Context, t *testing.T, session *assess.Session, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "images.log"))
	if err != nil {
		t.Fatalf("splitbraintest: %v", err)
	}
	defer f.Close()
	start := time.Now()
	log := io.MultiWriter(f, &prefixFilter{prefix: "images: ", to: t})
	if err := session.EnsureImages(ctx, log); err != nil {
		t.Fatalf("splitbraintest: %v\nBuild log: %s. Build the images from a splitbrain clone with `make images` (or `splitbrain images build`), or set %s=official on a machine that can pull the upstream images.", err, f.Name(), images.EnvProfile)
	}
	t.Logf("splitbraintest: images ready in %v", time.Since(start).Round(time.Second))
}

// fitBudget makes the battery's budget fit before go test's -timeout (deadline): a budget
// the caller chose must fit or the test fails now saying what to change; the default one is
// lowered to fit and note says so (checks it no longer reaches fail as "not run", so nothing
// is dropped silently).
func fitBudget(budget *time.Duration, chosen bool, deadline time.Time, hasDeadline bool, now time.Time) (note string, err error) {
	if !hasDeadline {
		return "", nil
	}
	total := deadline.Sub(now)
	left := total - cleanupMargin
	if *budget <= left {
		return "", nil
	}
	want := (*budget + 2*cleanupMargin).Round(time.Minute)
	if chosen {
		return "", fmt.Errorf("the budget %v does not fit in go test's -timeout (%v left, %v of it kept for cleanup): run go test -timeout %v, or lower splitbraintest.Budget",
			*budget, total.Round(time.Second), cleanupMargin, want)
	}
	if left <= 0 {
		return "", fmt.Errorf("go test's -timeout leaves %v, too little for any check (%v is kept for cleanup): run go test -timeout %v", total.Round(time.Second), cleanupMargin, want)
	}
	was := *budget
	*budget = left
	return fmt.Sprintf("budget lowered from %v to %v to fit go test's -timeout (run go test -timeout %v for all of it)", was, left.Round(time.Second), want), nil
}

// outDir is the named directory, or a fresh one kept only when the test fails: a failing
// check's report must outlive the test, a passing battery leaves nothing behind.
func outDir(t *testing.T, named string) string {
	if named == "" {
		named = os.Getenv(EnvDir)
	}
	if named != "" {
		abs, err := filepath.Abs(named)
		if err != nil {
			t.Fatalf("splitbraintest: Dir(%q): %v", named, err)
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			t.Fatalf("splitbraintest: Dir(%q): %v", named, err)
		}
		return abs
	}
	dir, err := os.MkdirTemp("", "splitbrain-"+unsafeChars.ReplaceAllString(t.Name(), "_")+"-")
	if err != nil {
		t.Fatalf("splitbraintest: scorecard directory: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("splitbraintest: scorecard and run reports kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// BuildGo builds the Go main package pkg (a directory or import path, as `go build` takes it,
// resolved in the test's module) into a static executable in t.TempDir and returns its path:
// CGO_ENABLED=0, because the candidate runs in an image without a C library; stripped
// (-trimpath -ldflags=-s -w) unless buildFlags name -ldflags: a third smaller, and every run
// writes a copy to its run directory. buildFlags go to `go build` before the package (e.g.
// "-tags", "broken").
func BuildGo(t testing.TB, pkg string, buildFlags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "candidate")
	args := []string{"build", "-o", out}
	if !slices.ContainsFunc(buildFlags, func(f string) bool { return strings.HasPrefix(strings.TrimLeft(f, "-"), "ldflags") }) {
		args = append(args, "-trimpath", "-ldflags=-s -w")
	}
	args = append(append(args, buildFlags...), pkg)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		t.Fatalf("splitbraintest: go %s: %v\n%s", strings.Join(args, " "), err, buf.String())
	}
	return out
}
