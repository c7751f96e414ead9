package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"

	"github.com/splitbrain-chaos/splitbrain/internal/runfile"
)

// indexRun is one run as the index shows it.
type indexRun struct {
	Test, Name  string
	Link        string // relative to the store root, always with forward slashes
	HasReport   bool
	Started     time.Time
	StartedText string
	Verdict     string
	Store       string
	Recipe      string
	// Variant names what changes the meaning of a verdict beside recipe and fault (an
	// unfenced resource, a non-steady workload, extra requirements); "" for the default.
	Variant  string
	Fault    string
	Seed     string
	Median   string
	medianNs int64
	Reason   string
	Duration string
}

type leaderCell struct {
	Run     *indexRun
	Runs    int
	Invalid int
	Unknown int
}

type leaderRow struct {
	Label string
	Cells []leaderCell
}

type indexView struct {
	Runs      []*indexRun
	Faults    []string
	Rows      []leaderRow
	Problems  []string
	Generated string
	Counts    map[string]int
}

// indexResults is the part of results.json the index reads.
type indexResults struct {
	Schema  int              `json:"schema"`
	Verdict checkers.Verdict `json:"verdict"`
	Reasons []struct {
		Message string `json:"message"`
	} `json:"reasons"`
	Params struct {
		Store  string `json:"store"`
		Recipe string `json:"recipe"`
	} `json:"params"`
	Run struct {
		StartT int64 `json:"start_t"`
		EndT   int64 `json:"end_t"`
	} `json:"run"`
	Latency struct {
		Samples []struct {
			TouchedLeader bool  `json:"touched_leader"`
			ElectionNs    int64 `json:"election_ns"`
		} `json:"samples"`
	} `json:"latency"`
}

// RenderIndex writes <storeDir>/index.html: every run found under
// <storeDir>/<test>/<timestamp>/ newest first, and the recipe × fault-profile leaderboard.
// Runs without results.json (still running, or crashed before checking) are listed as such.
func RenderIndex(storeDir string) error {
	st, err := os.Stat(storeDir)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("store directory %q does not exist: give the directory holding <test>/<timestamp>/ run directories (--store, default ./store)", storeDir)
	}
	runs, problems := ScanStore(storeDir)
	v := &indexView{Runs: runs, Problems: problems, Generated: time.Now().UTC().Format(time.RFC3339), Counts: map[string]int{}}
	for _, r := range runs {
		v.Counts[r.Verdict]++
	}
	v.Faults, v.Rows = leaderboard(runs)
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, "index.html.tmpl", v); err != nil {
		return fmt.Errorf("render index: %w", err)
	}
	return writeAtomic(filepath.Join(storeDir, IndexFile), buf.Bytes())
}

// ScanStore lists the runs under storeDir, newest first, with a note per unreadable run.
func ScanStore(storeDir string) ([]*indexRun, []string) {
	var runs []*indexRun
	var problems []string
	tests, err := os.ReadDir(storeDir)
	if err != nil {
		return nil, []string{err.Error()}
	}
	for _, t := range tests {
		if !t.IsDir() || strings.HasPrefix(t.Name(), ".") {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(storeDir, t.Name()))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, e := range ents {
			// Real directories only: "latest" is a symlink to one of them.
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			dir := filepath.Join(storeDir, t.Name(), e.Name())
			if _, err := os.Stat(filepath.Join(dir, HistoryFile)); err != nil {
				if _, err2 := os.Stat(filepath.Join(dir, ConfigFile)); err2 != nil {
					continue // not a run directory
				}
			}
			r, err := loadIndexRun(dir, t.Name(), e.Name())
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s/%s: %v", t.Name(), e.Name(), err))
			}
			if r != nil {
				runs = append(runs, r)
			}
		}
	}
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].Started.Equal(runs[j].Started) {
			return runs[i].Started.After(runs[j].Started)
		}
		return runs[i].Name > runs[j].Name
	})
	return runs, problems
}

func loadIndexRun(dir, test, name string) (*indexRun, error) {
	r := &indexRun{Test: test, Name: name, Link: path.Join(test, name) + "/", Verdict: "no-results", Median: "—", medianNs: -1, Seed: "—", Duration: "—"}
	if _, err := os.Stat(filepath.Join(dir, ReportFile)); err == nil {
		r.HasReport = true
		r.Link = path.Join(test, name, ReportFile)
	}
	cfg, cfgErr := readConfig(dir)
	if cfgErr == nil {
		r.Started = cfg.Started
		r.Store, r.Recipe = cfg.Flags.Store, cfg.Flags.Recipe
		r.Fault = firstNonEmpty(cfg.Flags.Nemesis, cfg.Schedule)
		r.Variant = variantOf(cfg.Flags.ResourceMode, cfg.Flags.Workload, cfg.Flags.Require)
		if cfg.Recipe != nil && cfg.Recipe.Negative {
			r.Recipe += " [negative control]"
		}
		if cfg.Seed != 0 || cfg.Flags.Seed != 0 {
			r.Seed = fmt.Sprint(firstNonZero(cfg.Seed, cfg.Flags.Seed))
		}
		if r.Recipe == "" && cfg.Flags.CandidateCmd != "" {
			r.Recipe = "cmd:" + filepath.Base(cfg.Flags.CandidateCmd)
		}
		if r.Recipe == "" && cfg.Flags.CandidateImage != "" {
			r.Recipe = "image:" + cfg.Flags.CandidateImage
		}
	}
	if r.Started.IsZero() {
		// The directory name is the start time (harness.RunDirName).
		if t, err := time.Parse("20060102T150405.000Z", strings.SplitN(name, "-", 2)[0]); err == nil {
			r.Started = t
		}
	}
	if !r.Started.IsZero() {
		r.StartedText = r.Started.UTC().Format("2006-01-02 15:04:05")
	}
	b, err := runfile.ReadFile(filepath.Join(dir, ResultsFile), runfile.MaxJSON)
	if err == nil {
		var res indexResults
		if err := json.Unmarshal(b, &res); err != nil || res.Schema != checkers.SchemaVersion {
			r.Verdict = "unreadable"
			if err == nil {
				err = fmt.Errorf("results schema %d, want %d", res.Schema, checkers.SchemaVersion)
			}
			return r, fmt.Errorf("results.json: %w (re-run 'splitbrain check')", err)
		}
		r.Verdict = string(res.Verdict)
		r.Store = firstNonEmpty(r.Store, res.Params.Store)
		r.Recipe = firstNonEmpty(r.Recipe, res.Params.Recipe)
		if len(res.Reasons) > 0 {
			r.Reason = res.Reasons[0].Message
		}
		if res.Run.EndT > res.Run.StartT {
			r.Duration = fmtDur(res.Run.EndT - res.Run.StartT)
		}
		var xs []int64
		for _, s := range res.Latency.Samples {
			if s.TouchedLeader && s.ElectionNs >= 0 {
				xs = append(xs, s.ElectionNs)
			}
		}
		if len(xs) > 0 {
			sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
			r.medianNs = xs[(len(xs)-1)/2]
			r.Median = fmtDur(r.medianNs)
		}
	}
	r.Store = firstNonEmpty(r.Store, "?")
	r.Recipe = firstNonEmpty(r.Recipe, "?")
	r.Fault = firstNonEmpty(r.Fault, "none")
	if cfgErr != nil {
		return r, cfgErr
	}
	return r, nil
}

func firstNonZero(xs ...int64) int64 {
	for _, x := range xs {
		if x != 0 {
			return x
		}
	}
	return 0
}

// leaderboard builds the recipe × fault matrix; runs come newest first, so the first run of
// a cell is its latest.
func leaderboard(runs []*indexRun) ([]string, []leaderRow) {
	faultSet := map[string]bool{}
	rowKeys := map[string]bool{}
	var decided []*indexRun // runs without a verdict (still running, unreadable) have no cell
	for _, r := range runs {
		switch checkers.Verdict(r.Verdict) {
		case checkers.Valid, checkers.Invalid, checkers.Unknown:
			decided = append(decided, r)
			faultSet[r.Fault] = true
		}
	}
	runs = decided
	// An unfenced run's invalid says nothing about the recipe under the fenced resource, so
	// variants get rows of their own instead of sharing (and overwriting) a cell.
	label := func(r *indexRun) string {
		l := r.Recipe + " (" + r.Store + ")"
		if r.Variant != "" {
			l += " · " + r.Variant
		}
		return l
	}
	for _, r := range runs {
		rowKeys[label(r)] = true
	}
	var faults, rows []string
	for f := range faultSet {
		faults = append(faults, f)
	}
	sort.Slice(faults, func(i, j int) bool {
		if (faults[i] == "none") != (faults[j] == "none") {
			return faults[i] == "none"
		}
		return faults[i] < faults[j]
	})
	for k := range rowKeys {
		rows = append(rows, k)
	}
	sort.Strings(rows)
	col := map[string]int{}
	for i, f := range faults {
		col[f] = i
	}
	out := make([]leaderRow, len(rows))
	rowIdx := map[string]int{}
	for i, k := range rows {
		rowIdx[k] = i
		out[i] = leaderRow{Label: k, Cells: make([]leaderCell, len(faults))}
	}
	for _, r := range runs {
		c := &out[rowIdx[label(r)]].Cells[col[r.Fault]]
		if c.Run == nil {
			c.Run = r
		}
		c.Runs++
		switch r.Verdict {
		case string(checkers.Invalid):
			c.Invalid++
		case string(checkers.Valid):
		default:
			c.Unknown++
		}
	}
	return faults, out
}

// variantOf describes the non-default settings that change what a verdict means.
func variantOf(resource, workload string, require []string) string {
	var parts []string
	if resource != "" && resource != "fenced" {
		parts = append(parts, resource)
	}
	if workload != "" && workload != "steady" {
		parts = append(parts, workload)
	}
	if len(require) > 0 {
		parts = append(parts, "require "+strings.Join(require, ","))
	}
	return strings.Join(parts, ", ")
}
