// Package runconfig is the schema of a run directory's config.json, shared by the harness
// (which writes it) and reports (which shows it; the harness imports reports, so the schema
// lives in this leaf package). It imports nothing of the harness that talks to Docker.
package runconfig

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

// FileName is config.json's name inside a run directory.
const FileName = runfile.ConfigFile

// Config is config.json: everything needed to understand and replay a run.
type Config struct {
	Splitbrain string    `json:"splitbrain"` // version of the splitbrain that ran it
	RunID      string    `json:"run_id"`
	Started    time.Time `json:"started"` // wall clock
	Args       []string  `json:"args,omitempty"`
	Replay     string    `json:"replay"` // the command line that replays the run
	// ReplayOf is the run directory this run replays (splitbrain replay / shrink); its Plan
	// is that run's plan, or a smaller one.
	ReplayOf     string            `json:"replay_of,omitempty"`
	Flags        Flags             `json:"flags"`
	Images       map[string]string `json:"images,omitempty"` // role -> image reference
	StoreVersion string            `json:"store_version,omitempty"`
	StoreNodes   []string          `json:"store_nodes,omitempty"`
	// StoreReuse says whether the store cluster was fresh or reused from an earlier run of a
	// suite (and its n-th use); empty for a run that started its own cluster.
	StoreReuse    string `json:"store_reuse,omitempty"`
	EngineVersion string `json:"engine_version,omitempty"`
	// ResourceAt is where the fenced resource ran: the harness's process (at the run
	// network's gateway) or a container on the run network (harness.ResourceEnv).
	ResourceAt string `json:"resource_at,omitempty"`
	Network    string `json:"network,omitempty"` // subnet
	Seed       int64  `json:"seed"`
	Schedule   string `json:"schedule"` // canonical nemesis schedule
	// Plan is the concrete fault plan (a nemesis.Plan; same seed → same plan), kept raw so
	// that readers need not link the nemesis package.
	Plan     json.RawMessage `json:"plan,omitempty"`
	Workload string          `json:"workload"` // what the workload does
	Recipe   *RecipeTiming   `json:"recipe_timing,omitempty"`
	Check    checkers.Params `json:"check"`
}

// Flags are the run's settings as given (defaults filled in).
type Flags struct {
	Store          string   `json:"store"`
	Until          string   `json:"until,omitempty"`  // event-ended faults phase (--until); Time is then its timeout
	Cycles         int      `json:"cycles,omitempty"` // event-paced form of the profile with this many cycles (--cycles)
	StoreNodes     int      `json:"store_nodes,omitempty"`
	Recipe         string   `json:"recipe,omitempty"`
	CandidateCmd   string   `json:"candidate_cmd,omitempty"`
	CandidateImage string   `json:"candidate_image,omitempty"`
	Nodes          int      `json:"nodes"`
	Time           string   `json:"time"`
	Warmup         string   `json:"warmup"`
	Recovery       string   `json:"recovery"`
	TTL            string   `json:"ttl"`
	WriteInterval  string   `json:"write_interval"`
	Workload       string   `json:"workload"`
	ResourceMode   string   `json:"resource"`
	Nemesis        string   `json:"nemesis"`
	Seed           int64    `json:"seed"`
	Profile        string   `json:"profile"`
	Require        []string `json:"require,omitempty"`
	// Candidate timing given on the command line ("" = not given).
	RenewInterval string `json:"renew_interval,omitempty"`
	RetryInterval string `json:"retry_interval,omitempty"`
	LeaderWork    string `json:"leader_work,omitempty"`
	FailoverBound string `json:"failover_bound,omitempty"`
	// CandidatePackages are the Debian packages a --candidate-cmd ran with.
	CandidatePackages []string `json:"candidate_packages,omitempty"`
	// CandidateArgs and CandidateEnv went to the --candidate-cmd or --candidate-image program.
	CandidateArgs []string `json:"candidate_args,omitempty"`
	CandidateEnv  []string `json:"candidate_env,omitempty"`
}

// RecipeTiming is the Go recipe's effective timing for the run.
type RecipeTiming struct {
	TTL           string `json:"ttl"`
	Renew         string `json:"renew,omitempty"`
	Retry         string `json:"retry,omitempty"`
	HandoffBound  string `json:"handoff_bound,omitempty"`
	FailoverBound string `json:"failover_bound,omitempty"`
	// Negative marks a deliberately broken recipe (a negative control): the index shows it
	// as such, so its invalid cells read as the checker catching it.
	Negative bool `json:"negative,omitempty"`
}

// Read reads dir's config.json. A missing file gives an error satisfying
// errors.Is(err, os.ErrNotExist), so callers can choose to treat it as empty.
func Read(dir string) (*Config, error) {
	path := filepath.Join(dir, FileName)
	b, err := runfile.ReadFile(path, runfile.MaxJSON)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: not a splitbrain config.json: %w", path, err)
	}
	return &c, nil
}
