// Package harness runs one chaos test end to end: it starts a store cluster, the fenced
// resource and the candidates in containers, records everything they print into
// history.jsonl, drives the workload and the nemesis through the lifecycle phases
// (setup → warmup → faults → heal → recovery → teardown), heals and tears down on every exit
// path, and finally asks the checkers for a verdict.
package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/progress"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history/runfile"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// Defaults, used when the corresponding Config field is zero.
const (
	DefaultNodes          = 3
	DefaultTTL            = 2 * time.Second
	DefaultWriteInterval  = 50 * time.Millisecond
	DefaultWarmup         = 5 * time.Second
	DefaultRecovery       = 10 * time.Second
	DefaultWorkload       = "steady"
	DefaultResourceMode   = "fenced"
	DefaultStoreRoot      = "store"
	DefaultProgressPeriod = 5 * time.Second

	// EnvStoreDir overrides the default store root (the --out flag overrides both).
	EnvStoreDir = "SPLITBRAIN_STORE_DIR"

	maxNodes = 15
)

// ResourceModes are the fencing modes of the resource container.
var ResourceModes = []string{"fenced", "unfenced"}

// Requirements are the optional checker requirements (--require).
var Requirements = []string{"exclusive", "liveness"}

// ProgressMode selects how a run's progress is shown (Config.ProgressMode).
type ProgressMode int

// Progress modes, in internal/progress's order (journal.go converts).
const (
	ProgressAuto  = ProgressMode(progress.ProgressAuto)  // a redrawn status line on a terminal, plain lines otherwise
	ProgressPlain = ProgressMode(progress.ProgressPlain) // a plain line every ProgressPeriod (CI logs)
	ProgressQuiet = ProgressMode(progress.ProgressQuiet) // nothing but the summary
	ProgressJSON  = ProgressMode(progress.ProgressJSON)  // one JSON object per line: status events and the summary
)

// Config describes one run. Zero values mean "default" where a default exists; Validate
// fills them in and rejects what cannot work.
type Config struct {
	Store      string // a store kind (internal/storekinds) or none (candidates elect among themselves)
	StoreNodes int    // store cluster size; 0 = the store's default
	Recipe     string // candidate recipe (Go recipes); optional with an external candidate
	Nodes      int    // number of candidates c1..cN

	FaultTime time.Duration // length of the faults phase (--time); with Until, its timeout
	// Until, when set, ends the faults phase on events instead of at FaultTime (--until, a
	// matrix row's until:): every planned fault (every triggered fault's count=) took effect
	// and healed, and checkers.ParseGoal's conditions hold. Warmup and recovery then end as
	// soon as a leader's writes are accepted (workingWrites). A run whose goal is not met in
	// time is unknown.
	Until string
	// Cycles, when > 0, runs the profile named by Nemesis in its event-paced form with this
	// many fault cycles (nemesis.PacedSpec), and ends the faults phase on events (Until
	// defaults to the goal's defaults).
	Cycles   int
	Warmup   time.Duration // no-fault phase before the faults
	Recovery time.Duration // no-fault phase after the final heal

	TTL           time.Duration // lease/session length handed to candidates
	WriteInterval time.Duration // leader write interval

	// Candidate timing passed in the contract's environment (0 = not set: the candidate's
	// default) and, for the checkers, the failover bound the candidate promises.
	RenewInterval time.Duration // SPLITBRAIN_RENEW_INTERVAL
	RetryInterval time.Duration // SPLITBRAIN_RETRY_INTERVAL
	LeaderWork    time.Duration // SPLITBRAIN_LEADER_WORK, passed only when LeaderWorkSet
	LeaderWorkSet bool          // LeaderWork was given (0 then means "no work gap")
	// FailoverBound overrides the expected crash-failover bound (default: the recipe's; for
	// an external candidate TTL + retry + 1 s).
	FailoverBound time.Duration

	Workload     string        // steady | handoff
	HandoffEvery time.Duration // handoff: period between SIGTERMs of the leader (0 = workload default)
	HandoffPause time.Duration // handoff: how long the resigned leader stays down (0 = default)

	ResourceMode string // fenced | unfenced

	// CandidateCmd is the host path of an executable that speaks the candidate contract, or
	// of a directory whose executable "candidate" does (the whole directory is mounted:
	// source, launcher, vendored jars or node_modules).
	CandidateCmd   string
	CandidateImage string // image whose entrypoint speaks the candidate contract
	// CandidatePackages are Debian packages a --candidate-cmd script needs (python3, curl,
	// ...): it then runs in the base image plus these, built once and cached.
	CandidatePackages []string
	// CandidateArgs are passed to a --candidate-cmd or --candidate-image entrypoint, and
	// CandidateEnv (NAME=VALUE) is added to its environment: a variant chosen per run.
	CandidateArgs []string
	CandidateEnv  []string

	Seed    int64  // drives the nemesis plan; 0 = derived from the clock (and recorded)
	Nemesis string // fault spec or profile name; "" or "none" = no faults
	// Plan, when set, is run as given instead of planning Nemesis with Seed: the concrete
	// plan of an earlier run's config.json (replay) or a smaller one (shrink). Whatever the
	// nemesis adds to its plans travels with it. Its topology must be this run's.
	Plan *nemesis.Plan
	// ReplayOf names the run directory this run replays (recorded in config.json).
	ReplayOf string

	Profile string // image profile, local or official; "" = SPLITBRAIN_IMAGE_PROFILE or local

	StoreRoot string // root of run directories; "" = $SPLITBRAIN_STORE_DIR or ./store
	TestName  string // directory name under StoreRoot; "" = <store>-<recipe>-<nemesis|none>

	Require []string // checker requirements: exclusive, liveness

	Progress       io.Writer     // periodic progress lines and the summary; nil = silent
	ProgressPeriod time.Duration // 0 = DefaultProgressPeriod (plain lines; a terminal is redrawn live)
	ProgressMode   ProgressMode  // ProgressAuto (terminal line or plain lines), ProgressQuiet or ProgressJSON

	Args []string // the command line, recorded in config.json for replay

	// StorePool, when set, lends the run a store cluster (and its network) kept from an
	// earlier run of the same key, reset in between, and takes it back if it is still sound;
	// it also ensures images once. nil = the run starts and removes its own cluster.
	StorePool *StorePool

	// Started, when set, is called with the run's id before anything is started: its
	// containers and network carry it, so a caller killed mid-run (go test's -timeout) can
	// say what `splitbrain clean --run ID` would remove.
	Started func(runID string)
}

// Validate fills in defaults and checks the configuration. Checks that need other packages'
// registries (recipes, nemesis specs) happen in Run's setup; this one is pure.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.Store == "" {
		bad("no store given: use --store with one of %s", strings.Join(storeKinds, ", "))
	} else if !slices.Contains(storeKinds, c.Store) {
		bad("unknown store %q: want one of %s", c.Store, strings.Join(storeKinds, ", "))
	}
	if c.StoreNodes < 0 {
		bad("store nodes %d: must be >= 1 (or 0 for the store's default)", c.StoreNodes)
	}
	if c.storeless() && c.StoreNodes > 0 {
		bad("--store-nodes %d: a --store none run starts no store; drop --store-nodes", c.StoreNodes)
	}
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.Nodes < 1 || c.Nodes > maxNodes {
		bad("--nodes %d: want 1..%d candidates", c.Nodes, maxNodes)
	}
	if c.CandidateCmd != "" && c.CandidateImage != "" {
		bad("--candidate-cmd and --candidate-image exclude each other: give one")
	}
	if c.Recipe == "" && c.CandidateCmd == "" && c.CandidateImage == "" {
		bad("no candidate given: use --recipe NAME, --candidate-cmd PATH or --candidate-image IMG")
	}
	if c.CandidateCmd != "" {
		if abs, err := filepath.Abs(c.CandidateCmd); err == nil {
			c.CandidateCmd = abs
		}
		if err := checkExecutable(c.CandidateCmd); err != nil {
			bad("--candidate-cmd: %v", err)
		}
	}
	if (len(c.CandidateArgs) > 0 || len(c.CandidateEnv) > 0) && c.CandidateCmd == "" && c.CandidateImage == "" {
		bad("--candidate-arg and --candidate-env need --candidate-cmd or --candidate-image: they go to that program")
	}
	for _, kv := range c.CandidateEnv {
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || !envName.MatchString(name):
			bad("--candidate-env %.60q: want NAME=VALUE, NAME of letters, digits and '_' not starting with a digit", kv)
		case strings.HasPrefix(name, "SPLITBRAIN_"):
			bad("--candidate-env %s: the SPLITBRAIN_ variables are the harness's (docs/candidates.md §1); use a name of your own", name)
		}
	}
	if len(c.CandidatePackages) > 0 {
		if c.CandidateCmd == "" {
			bad("--candidate-packages needs --candidate-cmd: it installs the packages the command runs with (an image brings its own)")
		}
		if _, err := images.ParsePackages(strings.Join(c.CandidatePackages, ",")); err != nil {
			bad("--candidate-packages: %v", err)
		}
	}
	if c.FaultTime <= 0 {
		bad("--time %v: the faults phase needs a positive duration, e.g. --time 30s", c.FaultTime)
	}
	if c.FaultTime > nemesis.MaxDuration || c.Warmup > nemesis.MaxDuration || c.Recovery > nemesis.MaxDuration {
		bad("--time %v, --warmup %v, --recovery %v: each must be at most %v", c.FaultTime, c.Warmup, c.Recovery, nemesis.MaxDuration)
	}
	if c.Warmup == 0 {
		c.Warmup = DefaultWarmup
	} else if c.Warmup < 0 {
		bad("--warmup %v: must not be negative", c.Warmup)
	}
	if c.Recovery == 0 {
		c.Recovery = DefaultRecovery
	} else if c.Recovery < 0 {
		bad("--recovery %v: must not be negative", c.Recovery)
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	} else if c.TTL < nemesis.MinFaultDuration {
		bad("--ttl %v: must be at least %v, e.g. --ttl 2s", c.TTL, nemesis.MinFaultDuration)
	}
	if c.WriteInterval == 0 {
		c.WriteInterval = DefaultWriteInterval
	} else if c.WriteInterval < time.Millisecond {
		bad("write interval %v: must be at least 1ms", c.WriteInterval)
	}
	if c.RenewInterval < 0 || c.RetryInterval < 0 || c.LeaderWork < 0 || c.FailoverBound < 0 {
		bad("--renew-interval, --retry-interval, --leader-work and --failover-bound must not be negative")
	}
	if c.RenewInterval > 0 && c.TTL > 0 && c.RenewInterval >= c.TTL {
		bad("--renew-interval %v: must be shorter than --ttl %v, or the lease expires between renewals", c.RenewInterval, c.TTL)
	}
	if c.Cycles < 0 || c.Cycles > nemesis.MaxCycles {
		bad("--cycles %d: want 1..%d fault cycles (0 = the profile's time table)", c.Cycles, nemesis.MaxCycles)
	}
	if c.Cycles > 0 && c.Until == "" {
		c.Until = "faults"
	}
	if c.Until != "" {
		if _, err := checkers.ParseGoal(c.Until); err != nil {
			bad("%v", err)
		}
	}
	if c.Workload == "" {
		c.Workload = DefaultWorkload
	}
	if c.HandoffEvery < 0 || c.HandoffPause < 0 {
		bad("handoff period/pause must not be negative")
	}
	if c.ResourceMode == "" {
		c.ResourceMode = DefaultResourceMode
		if _, ok := c.libraryRecipe(); ok {
			c.ResourceMode = DefaultResourceFor(c.Recipe)
		}
	}
	if !slices.Contains(ResourceModes, c.ResourceMode) {
		bad("--resource %q: want one of %s", c.ResourceMode, strings.Join(ResourceModes, ", "))
	}
	if c.Nemesis == "" {
		c.Nemesis = "none"
	}
	if c.Plan != nil {
		// A given plan (replay, shrink) may have been edited: it is checked like a built one.
		if err := c.Plan.CheckGiven(); err != nil {
			bad("the given fault plan: %v", err)
		} else {
			for _, f := range c.Plan.Faults {
				if end := time.Duration(f.At + f.For); end > c.FaultTime {
					bad("the given fault plan's fault %d ends at %v, after the %v fault phase: lengthen --time", f.ID, end, c.FaultTime)
				}
			}
		}
	}
	if c.Profile == "" {
		p := os.Getenv("SPLITBRAIN_IMAGE_PROFILE")
		if p == "" {
			p = string(images.ProfileLocal)
		}
		c.Profile = p
	}
	if _, err := images.ParseProfile(c.Profile); err != nil {
		bad("%v", err)
	}
	for _, r := range c.Require {
		if !slices.Contains(Requirements, r) {
			bad("--require %q: want a comma-separated subset of %s", r, strings.Join(Requirements, ","))
		}
	}
	if c.StoreRoot == "" {
		c.StoreRoot = os.Getenv(EnvStoreDir)
	}
	if c.StoreRoot == "" {
		c.StoreRoot = DefaultStoreRoot
	}
	if c.TestName == "" {
		c.TestName = DefaultTestName(c.Store, c.candidateLabel(), c.Nemesis)
	} else if !testNamePattern.MatchString(c.TestName) {
		bad("test name %q: use 1-100 chars of letters, digits, '.', '_' or '-' (it becomes a directory)", c.TestName)
	}
	if c.ProgressPeriod <= 0 {
		c.ProgressPeriod = DefaultProgressPeriod
	}
	return errors.Join(errs...)
}

// candidateLabel names the candidate in the test name: the recipe, or what runs instead.
func (c *Config) candidateLabel() string {
	switch {
	case c.Recipe != "":
		return c.Recipe
	case c.CandidateCmd != "":
		return "cmd-" + filepath.Base(c.CandidateCmd)
	case c.CandidateImage != "":
		return "image-" + c.CandidateImage
	}
	return "unknown"
}

// TotalTime is the planned length of warmup + faults + recovery (setup/teardown excluded).
func (c *Config) TotalTime() time.Duration { return c.Warmup + c.FaultTime + c.Recovery }

// storeKinds are the stores a run can use: those the candidate contract names.
var storeKinds = contract.Stores

var (
	testNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	unsafeNameChars = regexp.MustCompile(`[^a-z0-9._]+`)
)

// DefaultTestName is <store>-<recipe>-<nemesis|none>, reduced to characters that are safe in
// a directory name (a nemesis spec such as "pause:target=leader,for=6s" becomes
// "pause-target-leader-for-6s").
func DefaultTestName(store, recipe, nemesis string) string {
	if nemesis == "" {
		nemesis = "none"
	}
	name := strings.ToLower(store + "-" + recipe + "-" + nemesis)
	name = strings.Trim(unsafeNameChars.ReplaceAllString(name, "-"), "-.")
	if len(name) > 100 {
		name = strings.TrimRight(name[:100], "-.")
	}
	if name == "" {
		name = "run"
	}
	return name
}

// maxCandidateBytes bounds a --candidate-cmd executable, which setup reads whole (a static
// Go candidate is about 14 MB): a 20 GB sparse file once made the harness allocate its size.
const maxCandidateBytes = 1 << 30

// checkExecutable reports why path cannot serve as a candidate command. A file is opened
// (without blocking: a FIFO would hang setup) and looked at through its descriptor, so a
// device, a FIFO or a file over maxCandidateBytes is refused here, before anything starts.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s does not exist: give the path of an executable on this host", path)
		}
		return err
	}
	if !fi.IsDir() {
		if fi, err = runfile.StatInput(path, maxCandidateBytes); err != nil {
			if errors.Is(err, runfile.ErrTooLarge) {
				return fmt.Errorf("%w (a candidate executable may be at most %d MiB)", err, maxCandidateBytes>>20)
			}
			return err
		}
	} else {
		entry := filepath.Join(path, candidateDirEntry)
		efi, err := os.Lstat(entry)
		if err != nil || !efi.Mode().IsRegular() {
			return fmt.Errorf("%s is a directory without an executable file %q: a candidate directory runs its %s (docs/candidates.md §9)", path, candidateDirEntry, candidateDirEntry)
		}
		fi = efi
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable: chmod +x it", path)
	}
	return nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// storeless reports whether the run has no coordination store.
func (c *Config) storeless() bool { return c.Store == storekinds.None }

// candidateName is the i-th candidate's name (from 1).
func candidateName(i int) string { return fmt.Sprintf("c%d", i) }

// candidateNames are the run's candidates, c1..cN.
func (c *Config) candidateNames() []string {
	out := make([]string, c.Nodes)
	for i := range out {
		out[i] = candidateName(i + 1)
	}
	return out
}

// profile is Config.Profile as the images package takes it (Validate set and checked it).
func (c Config) profile() images.Profile { return images.Profile(c.Profile) }
