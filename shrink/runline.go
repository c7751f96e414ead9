package shrink

import (
	"fmt"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
)

// RunLine is the one-line `splitbrain run` that runs case c of the base configuration
// again: the case's nodes, phases and plan (rendered by Spec) with the base's store,
// candidate, timing and seed. exact is Spec's: false when a seeded choice is left to the
// seed rather than pinned in the spec.
func RunLine(base harness.Config, c Case) (line string, exact bool) {
	spec, exact := Spec(c.Plan)
	line = fmt.Sprintf("splitbrain run --store %s %s --nodes %d --warmup %v --time %v --recovery %v --ttl %v --resource %s --workload %s --seed %d",
		base.Store, candidateFlag(base), c.Nodes, c.Warmup, c.FaultPhase(), c.Recovery, base.TTL, base.ResourceMode, base.Workload, base.Seed)
	// Everything else the run was given that changes it, so the line runs what was shrunk.
	if base.WriteInterval > 0 && base.WriteInterval != harness.DefaultWriteInterval {
		line += fmt.Sprintf(" --write-interval %v", base.WriteInterval)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"handoff-every", base.HandoffEvery}, {"handoff-pause", base.HandoffPause}, {"renew-interval", base.RenewInterval},
		{"retry-interval", base.RetryInterval}, {"failover-bound", base.FailoverBound}} {
		if d.v > 0 {
			line += fmt.Sprintf(" --%s %v", d.flag, d.v)
		}
	}
	if base.LeaderWorkSet {
		line += fmt.Sprintf(" --leader-work %v", base.LeaderWork)
	}
	if len(base.CandidatePackages) > 0 {
		line += " --candidate-packages " + ShellQuote(strings.Join(base.CandidatePackages, ","))
	}
	for _, a := range base.CandidateArgs {
		line += " --candidate-arg " + ShellQuote(a)
	}
	for _, e := range base.CandidateEnv {
		line += " --candidate-env " + ShellQuote(e)
	}
	if base.StoreNodes > 0 {
		line += fmt.Sprintf(" --store-nodes %d", base.StoreNodes)
	}
	if base.Until != "" {
		line += " --until " + ShellQuote(base.Until)
	}
	if len(base.Require) > 0 {
		line += " --require " + strings.Join(base.Require, ",")
	}
	return line + " --nemesis " + ShellQuote(spec), exact
}

func candidateFlag(c harness.Config) string {
	switch {
	case c.CandidateCmd != "":
		return "--candidate-cmd " + ShellQuote(c.CandidateCmd)
	case c.CandidateImage != "":
		return "--candidate-image " + ShellQuote(c.CandidateImage)
	}
	return "--recipe " + c.Recipe
}

// ShellQuote single-quotes s unless it is plainly safe to paste into a shell.
func ShellQuote(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '.' || c == '-' || c == '_' || c == ':' || c == '=' || c == ',') {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
