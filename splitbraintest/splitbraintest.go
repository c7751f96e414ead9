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
// The checks run in a `splitbrain assess --driven` child process (see Assess), so a test that
// imports this package compiles and links none of the stores' client libraries.
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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/assess/assessproto"
	"github.com/splitbrain-chaos/splitbrain/assess/scorecard"
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
//
// The checks run in a `splitbrain assess --driven` process (see splitbrainBinary), one per
// subtest as the subtest asks, so the test binary links none of the stores' client
// libraries; a child that dies or prints what is not an event fails the test with its output.
func Assess(t *testing.T, c Candidate, opts ...Option) *scorecard.Scorecard {
	t.Helper()
	var s settings
	for _, o := range opts {
		o(&s)
	}
	if err := c.validate(true); err != nil {
		t.Fatalf("splitbraintest: %v", err)
	}
	if err := s.validate(); err != nil {
		t.Fatalf("splitbraintest: %v", err)
	}
	dl, hasDeadline := t.Deadline()
	ctx, cancel := checksContext(dl, hasDeadline)
	defer cancel()

	progress := &lineLogger{}
	progress.attach(t)
	defer progress.detach()
	bin, err := splitbrainBinary(t.Logf)
	if err != nil {
		t.Fatalf("splitbraintest: %v", err)
	}
	dir := outDir(t, s.dir)
	ch, err := startChild(bin, assessArgs(c, s, dir, false), progress)
	if err != nil {
		t.Fatalf("splitbraintest: %v", err)
	}
	// A Fatal before the end still ends the child: its stdin closes, it cancels, tears down
	// and exits, and this waits for that.
	defer ch.finish()
	// The checks' context ends on SIGINT/SIGTERM and before the -timeout: pass it on.
	stopCancel := context.AfterFunc(ctx, func() { ch.send(assessproto.CmdCancel) })
	defer stopCancel()

	plan, err := ch.next(assessproto.Plan)
	if err != nil {
		t.Fatalf("splitbraintest: %v", err)
	}
	ready, err := ch.next(assessproto.Ready)
	if err != nil {
		t.Fatalf("splitbraintest: %s", fatalText(err))
	}
	budget := ready.Budget
	note, err := fitBudget(&budget, s.budgetSet, dl, hasDeadline, time.Now())
	if err != nil {
		t.Fatalf("splitbraintest: %v", err)
	}
	if note != "" {
		t.Logf("splitbraintest: %s", note)
	}
	if err := ch.send(fmt.Sprintf("%s %v", assessproto.CmdBudget, budget)); err != nil {
		t.Fatalf("splitbraintest: %v%s", err, ch.output())
	}
	t.Logf("splitbraintest: %d checks for %s on %s, budget %v, scorecard in %s", len(plan.Checks), c.desc(), c.Store, budget.Round(time.Second), dir)
	resource := scorecard.ResourceFenced
	if s.unfenced {
		resource = scorecard.ResourceUnfenced
	}
	parent := t
	for _, chk := range plan.Checks {
		t.Run(chk.Name, func(t *testing.T) {
			progress.attach(t)
			defer progress.attach(parent)
			if err := ch.send(assessproto.CmdCheck + " " + chk.Name); err != nil {
				t.Fatalf("splitbraintest: %v%s", err, ch.output())
			}
			res, err := ch.next(assessproto.Result)
			if err != nil {
				t.Fatalf("splitbraintest: %s", fatalText(err))
			}
			if res.Error != "" {
				t.Errorf("harness error: %s", res.Error)
			}
			if res.Graded == nil {
				t.Fatalf("splitbraintest: splitbrain assess sent no grade for %s%s", chk.Name, ch.output())
			}
			if res.Graded.Verdict != scorecard.VerdictValid {
				t.Errorf("%s", failure(*res.Graded, resource))
				return
			}
			t.Logf("%s", passLine(*res.Graded))
		})
	}
	if err := ch.send(assessproto.CmdClose); err != nil {
		t.Fatalf("splitbraintest: %v%s", err, ch.output())
	}
	end, err := ch.next(assessproto.Scorecard)
	if err != nil {
		t.Fatalf("splitbraintest: scorecard: %s", fatalText(err))
	}
	if end.Error != "" {
		t.Errorf("splitbraintest: scorecard: %s", end.Error)
	}
	if err := ch.finish(); err != nil {
		t.Errorf("splitbraintest: splitbrain assess exited: %v%s", err, ch.output())
	}
	if bad := ch.badLines(); len(bad) > 0 {
		t.Errorf("splitbraintest: splitbrain assess printed lines that are not events (its output cannot be trusted):\n%s", strings.Join(bad, "\n"))
	}
	sc := end.Scorecard
	if sc == nil {
		t.Fatalf("splitbraintest: splitbrain assess sent no scorecard%s", ch.output())
	}
	t.Logf("splitbraintest: %s\nscorecard: %s", sc.Summary, filepath.Join(dir, scorecard.ScorecardHTML))
	return sc
}

// fatalText is the message of a child's failure, with what to do for the stages a user can
// fix: no Docker engine, images that could not be built.
func fatalText(err error) string {
	f, ok := err.(fatalError)
	if !ok {
		return err.Error()
	}
	switch f.ev.Stage {
	case "engine":
		return f.ev.Error + "\nThe checks run real servers in containers: start a Docker engine (`make deps` in a splitbrain clone runs scripts/ensure-docker.sh, which installs and starts Debian's docker.io as root), or point DOCKER_HOST at one."
	case "images":
		return fmt.Sprintf("%s\nBuild log: %s. Build the images from a splitbrain clone with `make images` (or `splitbrain images build`), or set %s=official on a machine that can pull the upstream images.", f.ev.Error, f.ev.File, envProfile)
	}
	return f.ev.Error
}

// ShortBattery is the battery under -short (or Short(true)): the checks that catch the
// commonest mistakes in the least time: a token that does not grow across leaders (handoff),
// a lease that never frees (kill-leader), a zombie leader writing after a pause longer than
// its lease (pause-leader). Checks(...) overrides it. A check that fails unfenced with a
// stale write is rerun fenced: a candidate that relies on its fencing token passes where
// the fence saves it; a violation no fence prevents (a duplicate token, a leader that
// never steps down) fails at once.
var ShortBattery = []string{"handoff", "pause-leader", "kill-leader"}

// assessArgs is the `splitbrain assess --driven` command line for c and s, writing into
// dir; list: only print the plan.
func assessArgs(c Candidate, s settings, dir string, list bool) []string {
	args := []string{"assess", "--driven", "--store", c.Store, "--out", dir, "--parallel", "1"}
	switch {
	case c.Cmd != "":
		args = append(args, "--candidate-cmd", c.Cmd)
		if len(c.Packages) > 0 {
			args = append(args, "--candidate-packages", strings.Join(c.Packages, ","))
		}
	case c.Image != "":
		args = append(args, "--candidate-image", c.Image)
	default:
		args = append(args, "--recipe", c.Recipe)
	}
	checks := s.checks
	short := testing.Short()
	if s.short != nil {
		short = *s.short
	}
	if short && len(checks) == 0 {
		checks = ShortBattery
	}
	if len(checks) > 0 {
		args = append(args, "--checks", strings.Join(checks, ","))
	}
	if s.seed != 0 {
		args = append(args, "--seed", strconv.FormatInt(s.seed, 10))
	}
	if s.budget > 0 {
		args = append(args, "--budget", s.budget.String())
	}
	if s.unfenced {
		args = append(args, "--resource", scorecard.ResourceUnfenced)
	}
	if list {
		args = append(args, "--list")
	}
	return args
}

// Plan lists the checks Assess would run for c with these options, in order, without
// running anything (no Docker needed; the splitbrain binary plans them, see Assess): their
// names are the subtests' names.
func Plan(c Candidate, opts ...Option) ([]scorecard.Check, error) {
	var s settings
	for _, o := range opts {
		o(&s)
	}
	if err := c.validate(false); err != nil {
		return nil, err
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	bin, err := splitbrainBinary(nil)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, assessArgs(c, s, os.TempDir(), true)...) // --list writes nothing
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("splitbrain assess --list: %v\n%s", err, strings.TrimSpace(stderr.String()))
	}
	ev, err := assessproto.Parse(bytes.TrimSpace(out))
	if err != nil || ev.Event != assessproto.Plan {
		return nil, fmt.Errorf("splitbrain assess --list printed no plan: %q (%v)", out, err)
	}
	return ev.Checks, nil
}

// validate names what is wrong with the options: what the command line would read otherwise
// (an empty name is no --checks at all, a comma two names).
func (s settings) validate() error {
	if s.budgetSet && s.budget <= 0 {
		return fmt.Errorf("Budget(%v): want a positive duration such as 8*time.Minute", s.budget)
	}
	for _, n := range s.checks {
		if n == "" || strings.ContainsAny(n, ", \t\n") {
			return fmt.Errorf("Checks(%q): a check name has no comma or space (splitbraintest.Plan lists them)", n)
		}
	}
	return nil
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
