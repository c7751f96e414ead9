package checkers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/splitbrain-chaos/splitbrain/history"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

// Files of a run directory the checkers read.
const (
	HistoryFile = runfile.HistoryFile
	ConfigFile  = runfile.ConfigFile
)

// LoadParams reads the checker parameters stored under the key "check" of a run's
// config.json; a missing file or key gives the defaults.
func LoadParams(runDir string) (Params, error) {
	path := filepath.Join(runDir, ConfigFile)
	var p Params
	b, err := runfile.ReadFile(path, runfile.MaxJSON)
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("read run config: %w", err)
	}
	var cfg struct {
		Check *json.RawMessage `json:"check"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return p, fmt.Errorf("%s: not valid JSON: %w", path, err)
	}
	if cfg.Check == nil {
		return p, nil
	}
	if err := json.Unmarshal(*cfg.Check, &p); err != nil {
		return p, fmt.Errorf("%s: key \"check\": %w (see docs/checkers.md for the fields)", path, err)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// CheckDir is the verdict of a run directory: every checker over its history.jsonl with p
// (usually LoadParams's). `splitbrain run`, `splitbrain check` and the matrix's re-check all
// call it, so they cannot disagree. It writes nothing except Porcupine visualizations into
// p.OutputDir when that is set.
func CheckDir(ctx context.Context, runDir string, p Params) (*Results, history.Info, error) {
	events, info, err := history.ReadFile(filepath.Join(runDir, HistoryFile))
	if err != nil {
		return nil, info, err
	}
	res, err := Check(ctx, events, p)
	if err != nil {
		return nil, info, fmt.Errorf("%s: %w", filepath.Join(runDir, ConfigFile), err)
	}
	return res, info, nil
}

// Disagreements lists how b's verdict and reasons differ from a's (empty: they agree).
// Findings and figures are not compared: only what decides the verdict.
func Disagreements(a, b *Results) []string {
	var out []string
	if a.Verdict != b.Verdict {
		out = append(out, fmt.Sprintf("verdict %s vs %s", a.Verdict, b.Verdict))
	}
	key := func(r Reason) string { return string(r.Severity) + " " + r.Code + ": " + r.Message }
	count := map[string]int{}
	for _, r := range a.Reasons {
		count[key(r)]++
	}
	for _, r := range b.Reasons {
		count[key(r)]--
	}
	for _, r := range a.Reasons {
		if k := key(r); count[k] > 0 {
			out = append(out, "only in the first: "+k)
			count[k] = 0
		}
	}
	for _, r := range b.Reasons {
		if k := key(r); count[k] < 0 {
			out = append(out, "only in the second: "+k)
			count[k] = 0
		}
	}
	return out
}
