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

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
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
	Unfenced bool // the resource did not fence: the run shows where the recipe fails without it
	Negative bool // a deliberately broken recipe
	Fault    string
	// Kinds are the fault kinds of the run's schedule ("none" for a fault-free run);
	// Schedule is the canonical schedule they come from.
	Kinds     []string
	Schedule  string
	elections []int64 // fault → next election of every failover, for the leaderboard's figures
	Seed      string
	Median    string
	medianNs  int64
	Reason    string
	Duration  string
}

// leaderChip is one fault kind under which a recipe ran, with one schedule: the verdict of
// its latest run, linked to that run's report, and the tally of all its runs.
type leaderChip struct {
	Kind     string // "pause", "clock+kill", "no fault"
	Variant  string // another workload or extra requirements
	Schedule string
	Run      *indexRun
	Runs     int
	Invalid  int
	Unknown  int
}

// leaderRow is one recipe on one store: its verdicts per fault kind with the fenced
// resource, its failover figures, and its verdicts with the resource unfenced.
type leaderRow struct {
	Label    string
	Recipe   string
	Store    string
	Negative bool
	Fenced   []*leaderChip
	Unfenced []*leaderChip
	// Failover figures over the latest fenced run of every schedule: fault → next election.
	Failovers       int
	Median, Max     string
	FailsUnfencedIn []string // the fault kinds under which the unfenced runs were invalid
}

type indexView struct {
	Runs      []*indexRun
	Rows      []*leaderRow
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
// <storeDir>/<test>/<timestamp>/ newest first, and the leaderboard (one row per recipe and store).
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
	v.Rows = leaderboard(runs)
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
		r.Schedule = cfg.Schedule
		r.Kinds = scheduleKinds(firstNonEmpty(cfg.Schedule, cfg.Flags.Nemesis))
		r.Unfenced = cfg.Flags.ResourceMode == "unfenced"
		r.Variant = variantOf(cfg.Flags.ResourceMode, cfg.Flags.Workload, cfg.Flags.Require)
		if cfg.Recipe != nil && cfg.Recipe.Negative {
			r.Negative = true
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
			r.Reason = roundDurationsIn(res.Reasons[0].Message)
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
			r.elections = xs
			r.medianNs = xs[(len(xs)-1)/2]
			r.Median = fmtDur(r.medianNs)
		}
	}
	r.Store = firstNonEmpty(r.Store, "?")
	r.Recipe = firstNonEmpty(r.Recipe, "?")
	r.Fault = firstNonEmpty(r.Fault, "none")
	if len(r.Kinds) == 0 {
		r.Kinds = scheduleKinds(r.Fault)
	}
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

// leaderboard builds one row per recipe and store; runs come newest first, so the first run
// of a chip is its latest. Runs without a verdict (still running, unreadable) are left out.
func leaderboard(runs []*indexRun) []*leaderRow {
	rows := map[string]*leaderRow{}
	chips := map[string]*leaderChip{}
	for _, r := range runs {
		switch checkers.Verdict(r.Verdict) {
		case checkers.Valid, checkers.Invalid, checkers.Unknown:
		default:
			continue
		}
		label := r.Recipe + " (" + r.Store + ")"
		row := rows[label]
		if row == nil {
			row = &leaderRow{Label: label, Recipe: strings.TrimSuffix(r.Recipe, " [negative control]"), Store: r.Store, Negative: r.Negative}
			rows[label] = row
		}
		// An unfenced run's verdict answers another question than a fenced one's, and so does
		// another workload's: each has chips of its own.
		key := fmt.Sprintf("%s\x00%v\x00%s\x00%s", label, r.Unfenced, r.Variant, firstNonEmpty(r.Schedule, r.Fault))
		c := chips[key]
		if c == nil {
			c = &leaderChip{Kind: kindLabel(r.Kinds), Variant: strings.TrimPrefix(strings.TrimPrefix(r.Variant, "unfenced"), ", "),
				Schedule: firstNonEmpty(r.Schedule, r.Fault), Run: r}
			chips[key] = c
			if r.Unfenced {
				row.Unfenced = append(row.Unfenced, c)
			} else {
				row.Fenced = append(row.Fenced, c)
			}
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
	out := make([]*leaderRow, 0, len(rows))
	for _, row := range rows {
		sortChips(row.Fenced)
		sortChips(row.Unfenced)
		var xs []int64
		for _, c := range row.Fenced {
			xs = append(xs, c.Run.elections...)
		}
		if len(xs) > 0 {
			sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
			row.Failovers, row.Median, row.Max = len(xs), fmtDur(xs[(len(xs)-1)/2]), fmtDur(xs[len(xs)-1])
		}
		seen := map[string]bool{}
		for _, c := range row.Unfenced {
			if c.Run.Verdict == string(checkers.Invalid) && !seen[c.Kind] {
				seen[c.Kind] = true
				row.FailsUnfencedIn = append(row.FailsUnfencedIn, c.Kind)
			}
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Negative != out[j].Negative {
			return !out[i].Negative // negative controls after the recipes meant to work
		}
		if out[i].Store != out[j].Store {
			return out[i].Store < out[j].Store
		}
		return out[i].Recipe < out[j].Recipe
	})
	return out
}

// sortChips puts the fault-free run first, then kinds alphabetically, then schedules.
func sortChips(cs []*leaderChip) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if (a.Kind == noFault) != (b.Kind == noFault) {
			return a.Kind == noFault
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Variant != b.Variant {
			return a.Variant < b.Variant
		}
		return a.Schedule < b.Schedule
	})
}

const noFault = "no fault"

// scheduleKinds reads the fault kinds out of a canonical schedule ("pause:target=leader,…;
// kill:…"; " + " joins them in the matrix); a named profile without a schedule ("pause-leader")
// is its own kind.
func scheduleKinds(schedule string) []string {
	schedule = strings.TrimSpace(schedule)
	if schedule == "" || schedule == "none" {
		return nil
	}
	var kinds []string
	seen := map[string]bool{}
	for _, part := range strings.FieldsFunc(strings.ReplaceAll(schedule, " + ", ";"), func(r rune) bool { return r == ';' }) {
		k := strings.TrimSpace(part)
		if i := strings.IndexByte(k, ':'); i >= 0 {
			k = k[:i]
		}
		if k != "" && !seen[k] {
			seen[k] = true
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// kindLabel names a chip: "no fault", "pause", "clock+kill".
func kindLabel(kinds []string) string {
	if len(kinds) == 0 {
		return noFault
	}
	return strings.Join(kinds, "+")
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
