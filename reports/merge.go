package reports

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/reports/runconfig"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

// MergeSummary says what MergeStores put together.
type MergeSummary struct {
	Shards   int
	Runs     int
	Version  string // the one splitbrain version every run was made with
	JUnit    string // merged matrix JUnit ("" when no shard had one)
	Testcase int    // testcases in the merged JUnit
}

// mergeRun is one run directory found in a shard.
type mergeRun struct {
	shard, rel, version, runID string
}

// MergeStores merges the store directories of matrix shards (`splitbrain matrix --shard`) into
// out: every run directory is copied under the same <test>/<run> path, the shards' matrix
// junit.xml files become one, and out/index.html is rendered over all runs. It refuses, before
// writing anything, runs made by different splitbrain versions and run directories or run ids
// (or matrix testcases) that occur in more than one shard: either means the shards are not
// parts of one matrix run. A new out appears whole or not at all: it is built in a hidden
// directory beside it and renamed into place once everything is there.
func MergeStores(out string, shards []string) (MergeSummary, error) {
	var sum MergeSummary
	if len(shards) == 0 {
		return sum, errors.New("merge: no shard store directories given")
	}
	var runs []mergeRun
	var junits []string
	versions := map[string][]string{}
	for _, sh := range shards {
		if same, _ := sameDir(sh, out); same {
			return sum, fmt.Errorf("merge: shard %s is the output directory: merge into a new directory", sh)
		}
		st, err := os.Stat(sh)
		if err != nil || !st.IsDir() {
			return sum, fmt.Errorf("merge: shard %q is not a directory (give the store directories the shards wrote)", sh)
		}
		found, err := shardRuns(sh)
		if err != nil {
			return sum, err
		}
		if len(found) == 0 {
			return sum, fmt.Errorf("merge: shard %s holds no run directory (<test>/<run>/config.json)", sh)
		}
		for _, r := range found {
			versions[r.version] = appendOnce(versions[r.version], sh)
		}
		runs = append(runs, found...)
		if j := filepath.Join(sh, JUnitFile); fileExists(j) {
			junits = append(junits, j)
		}
	}
	if len(versions) > 1 {
		var parts []string
		for _, v := range slices.Sorted(maps.Keys(versions)) {
			parts = append(parts, fmt.Sprintf("%s (in %s)", v, strings.Join(versions[v], ", ")))
		}
		return sum, fmt.Errorf("merge: the shards ran different splitbrain versions: %s; re-run every shard with one build", strings.Join(parts, "; "))
	}
	byRel, byID := map[string]string{}, map[string]string{}
	for _, r := range runs {
		if prev, ok := byRel[r.rel]; ok {
			return sum, fmt.Errorf("merge: run directory %s is in both %s and %s: a run can come from one shard only", r.rel, prev, r.shard)
		}
		byRel[r.rel] = r.shard
		if r.runID != "" {
			if prev, ok := byID[r.runID]; ok {
				return sum, fmt.Errorf("merge: run id %s is in both %s and %s", r.runID, prev, filepath.Join(r.shard, r.rel))
			}
			byID[r.runID] = filepath.Join(r.shard, r.rel)
		}
	}
	if err := uniqueTestcases(junits); err != nil {
		return sum, err
	}
	// A refusal found only while copying (a symlink out of a run directory) must not leave
	// a half-written out: a new out is built beside it and renamed into place at the end; an
	// existing one (a caller merging into its store root) loses what this merge added.
	build, made, err := mergeTarget(out)
	if err != nil {
		return sum, err
	}
	fail := func(err error) (MergeSummary, error) {
		for i := len(made) - 1; i >= 0; i-- {
			os.RemoveAll(made[i])
		}
		return MergeSummary{}, err
	}
	for _, r := range runs {
		if build == out {
			if p := firstMissing(out, r.rel); p != "" {
				made = append(made, p)
			}
		}
		if err := copyTree(filepath.Join(r.shard, r.rel), filepath.Join(build, r.rel)); err != nil {
			return fail(fmt.Errorf("merge: copy %s from %s: %w", r.rel, r.shard, err))
		}
	}
	if err := relinkLatest(build); err != nil {
		return fail(err)
	}
	sum.Shards, sum.Runs = len(shards), len(runs)
	for v := range versions {
		sum.Version = v
	}
	if len(junits) > 0 {
		sum.JUnit = filepath.Join(out, JUnitFile)
		if err := CombineJUnit(junits, filepath.Join(build, JUnitFile)); err != nil {
			return fail(err)
		}
		n, _ := testcaseNames(filepath.Join(build, JUnitFile))
		sum.Testcase = len(n)
	}
	if err := RenderIndex(build); err != nil {
		return fail(err)
	}
	if build != out {
		if err := os.Rename(build, out); err != nil {
			return fail(fmt.Errorf("merge: %w", err))
		}
	}
	return sum, nil
}

// mergeTarget is the directory a merge into out writes: out itself when it exists, else a
// new hidden directory beside it (mode 0755) that the merge renames to out when done. made
// lists what to remove when the merge fails.
func mergeTarget(out string) (build string, made []string, err error) {
	if _, err := os.Lstat(out); err == nil {
		return out, nil, nil
	}
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", nil, fmt.Errorf("merge: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".merging-")
	if err != nil {
		return "", nil, fmt.Errorf("merge: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.Remove(tmp)
		return "", nil, fmt.Errorf("merge: %w", err)
	}
	return tmp, []string{tmp}, nil
}

// firstMissing is the first path from root along rel that does not exist yet ("" when all
// do): removing it undoes what creating root/rel adds, and nothing that was there before.
func firstMissing(root, rel string) string {
	p := root
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		p = filepath.Join(p, part)
		if _, err := os.Lstat(p); err != nil {
			return p
		}
	}
	return ""
}

// shardRuns lists the run directories (<test>/<run>/ with config.json) of a shard.
func shardRuns(shard string) ([]mergeRun, error) {
	paths, err := filepath.Glob(filepath.Join(shard, "*", "*", ConfigFile))
	if err != nil {
		return nil, err
	}
	var out []mergeRun
	for _, p := range paths {
		dir := filepath.Dir(p)
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			continue // "latest" is a symlink to a run directory listed anyway
		}
		rc, err := runconfig.Read(dir)
		if err != nil {
			return nil, fmt.Errorf("merge: %s: %w", dir, err)
		}
		rel, _ := filepath.Rel(shard, dir)
		out = append(out, mergeRun{shard: shard, rel: rel, version: rc.Splitbrain, runID: rc.RunID})
	}
	return out, nil
}

// uniqueTestcases refuses a matrix row that appears in two shards' junit.xml.
func uniqueTestcases(junits []string) error {
	seen := map[string]string{}
	for _, j := range junits {
		names, err := testcaseNames(j)
		if err != nil {
			return fmt.Errorf("merge: %s: %w", j, err)
		}
		for _, n := range names {
			if prev, ok := seen[n]; ok {
				return fmt.Errorf("merge: matrix row %s is in both %s and %s: were two shards given the same --shard?", n, prev, j)
			}
			seen[n] = j
		}
	}
	return nil
}

func testcaseNames(path string) ([]string, error) {
	b, err := runfile.ReadFile(path, runfile.MaxJSON)
	if err != nil {
		return nil, err
	}
	var many junitSuites
	if err := xml.Unmarshal(b, &many); err != nil || many.XMLName.Local != "testsuites" {
		var one junitSuite
		if err := xml.Unmarshal(b, &one); err != nil {
			return nil, fmt.Errorf("not a JUnit XML file")
		}
		many.Suites = []junitSuite{one}
	}
	var names []string
	for _, s := range many.Suites {
		for _, c := range s.Cases {
			names = append(names, c.Name)
		}
	}
	return names, nil
}

// copyTree copies a run directory (regular files, directories and symlinks).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&os.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			// A link that leads out of the shard's run directory is not evidence, and would
			// make every reader of the merged store read outside it.
			if !linkInside(src, p) {
				return fmt.Errorf("merge: %s is a symlink out of its run directory (to %s): remove it from the shard", p, link)
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(p, target)
		}
		return nil // sockets, FIFOs: not part of a run's evidence
	})
}

// linkInside reports whether the symlink at p resolves inside root.
func linkInside(root, p string) bool {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	t, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(r, t)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func copyFile(src, dst string) error {
	in, err := runfile.Open(src, runfile.MaxHistory)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// relinkLatest points each <test>/latest at its newest run directory (names sort by time).
func relinkLatest(store string) error {
	tests, err := os.ReadDir(store)
	if err != nil {
		return err
	}
	for _, t := range tests {
		if !t.IsDir() {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(store, t.Name()))
		if err != nil {
			return err
		}
		var dirs []string
		for _, e := range ents {
			if e.IsDir() {
				dirs = append(dirs, e.Name())
			}
		}
		if len(dirs) == 0 {
			continue
		}
		sort.Strings(dirs)
		link := filepath.Join(store, t.Name(), "latest")
		_ = os.Remove(link)
		if err := os.Symlink(dirs[len(dirs)-1], link); err != nil {
			return fmt.Errorf("merge: %w", err)
		}
	}
	return nil
}

func sameDir(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
