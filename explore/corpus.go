package explore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

// CorpusVersion is the corpus file's format version.
const CorpusVersion = 1

// Entry is a schedule that showed new behaviour: later runs mutate it.
type Entry struct {
	Chain     Chain     `json:"chain"`
	Spec      string    `json:"spec"`
	Signature Signature `json:"signature"`
	// New are the features no run before it had showed.
	New     []string `json:"new"`
	Try     int      `json:"try"` // the search's try that ran it (counted over resumes)
	Verdict string   `json:"verdict"`
	RunDir  string   `json:"run_dir,omitempty"`
	// Picked counts how often it was mutated; rarely picked entries are picked first.
	Picked int `json:"picked"`
}

// Corpus is the guided search's memory: the schedules that showed new behaviour and every
// feature seen so far. It is saved after each try, so a search can be resumed.
type Corpus struct {
	Version int `json:"version"`
	// Target names what the corpus was grown on (store, recipe, resource mode); a resume on
	// another target is refused, since behaviour of one recipe says little about another.
	Target string `json:"target"`
	Seed   int64  `json:"seed"`
	Tries  int    `json:"tries"` // tries run so far, over every resume
	// Seen counts, per feature, the runs that showed it.
	Seen    map[string]int `json:"seen"`
	Entries []Entry        `json:"entries"`
	// BestNear is the highest Nearness a run of the search showed.
	BestNear int `json:"best_near,omitempty"`
}

// NewCorpus starts an empty corpus for target.
func NewCorpus(target string, seed int64) *Corpus {
	return &Corpus{Version: CorpusVersion, Target: target, Seed: seed, Seen: map[string]int{}}
}

// Observe records a run's signature and returns the features nobody had seen before.
func (c *Corpus) Observe(sig Signature) []string {
	var fresh []string
	for _, f := range sig {
		if c.Seen[f] == 0 {
			fresh = append(fresh, f)
		}
		c.Seen[f]++
	}
	return fresh
}

// Add keeps e unless a chain with the same key is in already.
func (c *Corpus) Add(e Entry) bool {
	k := e.Chain.Key()
	if slices.ContainsFunc(c.Entries, func(o Entry) bool { return o.Chain.Key() == k }) {
		return false
	}
	c.Entries = append(c.Entries, e)
	return true
}

// pick chooses the entry to mutate: among the best-scored third, favouring entries that came
// near a violation (Signature.Nearness), whose features are rare (seen by few runs), that
// were picked least and whose run was not unknown, so the search keeps pushing at the edge of what it has seen instead of
// mutating the first find forever. Swarm testing applies to mutations too: only entries
// that use one of the swarm's kinds are candidates, when there are any.
func (c *Corpus) pick(rnd func(int) int, swarm []string) *Entry {
	var idx []int
	for i, e := range c.Entries {
		if slices.ContainsFunc(e.Chain.Links, func(l Link) bool { return slices.Contains(swarm, l.Kind) }) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		for i := range c.Entries {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	score := func(e Entry) int {
		rare := 0
		for _, f := range e.New {
			if c.Seen[f] <= 2 {
				rare++
			}
		}
		s := e.Picked*4 - rare - 3*e.Signature.Nearness()
		if e.Verdict == "unknown" {
			// Its chain did not run through (a link's event never came): its mutants are
			// likely to wait out their timeout as well.
			s += 4
		}
		return s
	}
	sort.SliceStable(idx, func(a, b int) bool { return score(c.Entries[idx[a]]) < score(c.Entries[idx[b]]) })
	n := max(1, (len(idx)+2)/3)
	e := &c.Entries[idx[rnd(n)]]
	e.Picked++
	return e
}

// Save writes the corpus to path atomically (a crash mid-write leaves the old file).
func (c *Corpus) Save(path string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	// Never renamed over a device or FIFO: --corpus /dev/null once replaced the device.
	if err := runfile.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("corpus: %w", err)
	}
	return nil
}

// LoadCorpus reads a corpus saved by Save.
func LoadCorpus(path string) (*Corpus, error) {
	// Bounded and non-blocking: a FIFO hung the resume, /dev/zero exhausted memory.
	b, err := runfile.ReadInput(path, runfile.MaxJSON)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("corpus %s does not exist: drop --resume to start a new one there", path)
		}
		return nil, fmt.Errorf("corpus: %w", err)
	}
	var c Corpus
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("corpus %s is not a corpus file (%v): give the --corpus file an earlier explore wrote", path, err)
	}
	if c.Version != CorpusVersion {
		return nil, fmt.Errorf("corpus %s has format version %d, this splitbrain reads %d", path, c.Version, CorpusVersion)
	}
	if c.Seen == nil {
		c.Seen = map[string]int{}
	}
	return &c, nil
}
