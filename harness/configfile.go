package harness

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/reports/runconfig"
)

// The config.json schema lives in reports/runconfig so that reports can read it without
// importing the harness.
type (
	RunConfig    = runconfig.Config
	RunFlags     = runconfig.Flags
	RecipeTiming = runconfig.RecipeTiming
)

// Version is the running splitbrain's module version ("(devel)" for a source build).
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v := bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v += " " + s.Value
			}
		}
		return v
	}
	return "(devel)"
}

func (r *run) flags() RunFlags {
	c := r.cfg
	f := RunFlags{
		Store: c.Store, StoreNodes: c.StoreNodes, Recipe: c.Recipe, CandidateCmd: c.CandidateCmd,
		CandidateImage: c.CandidateImage, Nodes: c.Nodes, Time: c.FaultTime.String(),
		Warmup: c.Warmup.String(), Recovery: c.Recovery.String(), TTL: c.TTL.String(),
		WriteInterval: c.WriteInterval.String(), Workload: c.Workload, ResourceMode: c.ResourceMode,
		Nemesis: c.Nemesis, Seed: c.Seed, Profile: c.Profile, Require: c.Require,
		RenewInterval: durOrEmpty(c.RenewInterval), RetryInterval: durOrEmpty(c.RetryInterval),
		FailoverBound: durOrEmpty(c.FailoverBound), CandidatePackages: c.CandidatePackages,
		Until: c.Until, Cycles: c.Cycles, CandidateArgs: c.CandidateArgs, CandidateEnv: c.CandidateEnv,
	}
	if c.LeaderWorkSet {
		f.LeaderWork = c.LeaderWork.String()
	}
	return f
}

// checkParams are the checker parameters of this run.
func (r *run) checkParams() checkers.Params {
	c := r.cfg
	p := checkers.Params{
		Store: c.Store, Recipe: c.Recipe, Nodes: c.candidateNames(),
		LeaseTTL: checkers.Duration(c.TTL), WriteInterval: checkers.Duration(c.WriteInterval),
		ResourceMode: c.ResourceMode, Require: c.Require, OutputDir: r.log.dir,
	}
	if lib, ok := c.libraryRecipe(); ok {
		if img, err := lib.Image(); err == nil {
			p.Library = img.Versions
		}
	}
	if t := r.prep.recipe.Timing; t.TTL > 0 {
		p.LeaseTTL = checkers.Duration(t.TTL)
		p.RetryInterval = checkers.Duration(t.Retry)
		if t.FailoverBound > 0 {
			p.ExpectedFailover = checkers.Duration(t.FailoverBound)
		}
	} else if c.RetryInterval > 0 {
		p.RetryInterval = checkers.Duration(c.RetryInterval) // an external candidate's declared poll period
	}
	if c.FailoverBound > 0 {
		p.ExpectedFailover = checkers.Duration(c.FailoverBound)
	}
	p.Goal = goalFor(r.prep.until, r.faults.planned())
	return p
}

// replayCommand is the command line that runs the same configuration with the same seed.
func (r *run) replayCommand() string {
	if r.cfg.Plan != nil {
		// A given plan is not what --nemesis and --seed would plan: replay the directory.
		return "splitbrain replay " + shellQuote(r.log.dir)
	}
	f := r.flags()
	cmd := "splitbrain run --store " + f.Store
	switch {
	case f.CandidateCmd != "":
		cmd += " --candidate-cmd " + shellQuote(f.CandidateCmd)
		if len(f.CandidatePackages) > 0 {
			cmd += " --candidate-packages " + joinComma(f.CandidatePackages)
		}
	case f.CandidateImage != "":
		cmd += " --candidate-image " + shellQuote(f.CandidateImage)
	}
	for _, a := range f.CandidateArgs {
		cmd += " --candidate-arg " + shellQuote(a)
	}
	for _, kv := range f.CandidateEnv {
		cmd += " --candidate-env " + shellQuote(kv)
	}
	if f.Recipe != "" {
		cmd += " --recipe " + f.Recipe
	}
	cmd += " --nodes " + itoa(f.Nodes) + " --time " + f.Time + " --warmup " + f.Warmup + " --recovery " + f.Recovery +
		" --ttl " + f.TTL + " --workload " + f.Workload + " --resource " + f.ResourceMode +
		" --nemesis " + shellQuote(f.Nemesis) + " --seed " + itoa64(f.Seed) + " --profile " + f.Profile
	if len(f.Require) > 0 {
		cmd += " --require " + joinComma(f.Require)
	}
	if f.Cycles > 0 {
		cmd += " --cycles " + itoa(f.Cycles)
	}
	if f.Until != "" {
		cmd += " --until " + shellQuote(f.Until)
	}
	for _, o := range []struct{ flag, v string }{{"renew-interval", f.RenewInterval}, {"retry-interval", f.RetryInterval},
		{"leader-work", f.LeaderWork}, {"failover-bound", f.FailoverBound}} {
		if o.v != "" {
			cmd += " --" + o.flag + " " + o.v
		}
	}
	return cmd
}

// writeConfig (re)writes config.json with what is known so far: early, so even a run that
// fails in setup says what it was; again once images, versions and the plan are known.
func (r *run) writeConfig() error {
	rc := RunConfig{
		Splitbrain: Version(), RunID: r.runID, Started: r.log.started.UTC(), Args: r.cfg.Args,
		Replay: r.replayCommand(), ReplayOf: r.cfg.ReplayOf, Flags: r.flags(), Images: imageRefs(r.imgs), Seed: r.prep.seed,
		Schedule: r.prep.schedule.String(), Workload: r.prep.workload.Describe(), Check: r.checkParams(),
	}
	if r.eng != nil {
		rc.EngineVersion = r.eng.ServerVersion()
	}
	if net := r.cluster.network(); net != nil {
		rc.Network = net.Subnet.String()
	}
	if store := r.cluster.storeCluster(); store != nil {
		rc.StoreVersion = store.Version()
		for _, n := range store.Nodes() {
			rc.StoreNodes = append(rc.StoreNodes, n.Name())
		}
	}
	rc.StoreReuse = r.cluster.reuseNote()
	if r.resource != nil {
		rc.ResourceAt = r.resource.at
	}
	if p := r.faults.planned(); len(p.Faults) > 0 || p.Schedule != "" {
		plan, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encode fault plan: %w", err)
		}
		rc.Plan = plan
	}
	if t := r.prep.recipe.Timing; t.TTL > 0 {
		rc.Recipe = &RecipeTiming{TTL: t.TTL.String(), Renew: durOrEmpty(t.Renew), Retry: durOrEmpty(t.Retry),
			HandoffBound: durOrEmpty(t.HandoffBound), FailoverBound: durOrEmpty(t.FailoverBound),
			Negative: r.prep.recipe.Negative}
	}
	return writeJSON(filepath.Join(r.log.dir, ConfigFile), rc)
}

// imageRefs is the images map as config.json stores it (role -> reference).
func imageRefs(set images.Set) map[string]string {
	if len(set) == 0 {
		return nil
	}
	out := make(map[string]string, len(set))
	for role, ref := range set {
		out[string(role)] = ref
	}
	return out
}

func durOrEmpty(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// ReadRunConfig reads a run directory's config.json.
func ReadRunConfig(dir string) (*RunConfig, error) { return runconfig.Read(dir) }
