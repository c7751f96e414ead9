package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// setConfig rewrites fields of a fixture run's config.json.
func setConfig(t *testing.T, dir string, kv map[string]any) {
	t.Helper()
	p := filepath.Join(dir, ConfigFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range kv {
		m[k] = v
	}
	b, _ = json.Marshal(m)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// shardStore writes one fixture run per test name into a new store and a matrix junit.xml
// naming them.
func shardStore(t *testing.T, tests ...string) string {
	t.Helper()
	store := t.TempDir()
	var cases []string
	for i, test := range tests {
		f := defaultFixture()
		f.started = time.Date(2025, 2, 1, i, 0, 0, 0, time.UTC)
		dir := filepath.Join(store, test, "20250201T000000.000Z")
		writeRun(t, dir, f)
		setConfig(t, dir, map[string]any{"run_id": "sb-" + test})
		if err := RenderRun(dir); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, `<testcase name="`+test+`" classname="splitbrain.matrix.etcd" time="1"></testcase>`)
	}
	junit := `<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="splitbrain-matrix" tests="` + itoa(len(tests)) + `" failures="0" errors="0" time="1">` +
		strings.Join(cases, "") + `</testsuite></testsuites>`
	if err := os.WriteFile(filepath.Join(store, JUnitFile), []byte(junit), 0o644); err != nil {
		t.Fatal(err)
	}
	return store
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func links(t *testing.T, store string) []string {
	t.Helper()
	runs, problems := ScanStore(store)
	if len(problems) > 0 {
		t.Fatalf("%s: %v", store, problems)
	}
	var out []string
	for _, r := range runs {
		out = append(out, r.Link+" "+r.Verdict)
	}
	slices.Sort(out)
	return out
}

func TestMergeStores(t *testing.T) {
	a := shardStore(t, "etcd-a", "etcd-b")
	b := shardStore(t, "redis-c")
	out := filepath.Join(t.TempDir(), "merged")
	sum, err := MergeStores(out, []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Shards != 2 || sum.Runs != 3 || sum.Testcase != 3 || sum.Version != "(devel)" {
		t.Errorf("summary %+v: want 2 shards, 3 runs, 3 testcases, version (devel)", sum)
	}
	// The merged index lists exactly the shards' runs, with their verdicts.
	want := append(links(t, a), links(t, b)...)
	slices.Sort(want)
	if got := links(t, out); !slices.Equal(got, want) {
		t.Errorf("merged index runs %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(out, IndexFile)); err != nil {
		t.Error("no merged index.html")
	}
	if l, err := os.Readlink(filepath.Join(out, "etcd-a", "latest")); err != nil || l != "20250201T000000.000Z" {
		t.Errorf("latest link %q %v", l, err)
	}
	j, _ := os.ReadFile(filepath.Join(out, JUnitFile))
	for _, n := range []string{"etcd-a", "etcd-b", "redis-c"} {
		if !strings.Contains(string(j), `name="`+n+`"`) {
			t.Errorf("merged junit lacks %s", n)
		}
	}
}

func TestMergeStoresRefuses(t *testing.T) {
	a := shardStore(t, "etcd-a")
	cases := map[string]func() []string{
		"same run directory": func() []string { return []string{a, shardStore(t, "etcd-a")} },
		"same run id": func() []string {
			b := shardStore(t, "etcd-z")
			setConfig(t, filepath.Join(b, "etcd-z", "20250201T000000.000Z"), map[string]any{"run_id": "sb-etcd-a"})
			return []string{a, b}
		},
		"mixed versions": func() []string {
			b := shardStore(t, "etcd-v")
			setConfig(t, filepath.Join(b, "etcd-v", "20250201T000000.000Z"), map[string]any{"splitbrain": "v9.9.9"})
			return []string{a, b}
		},
		"row in two shards": func() []string {
			b := shardStore(t, "etcd-y")
			j, _ := os.ReadFile(filepath.Join(a, JUnitFile))
			os.WriteFile(filepath.Join(b, JUnitFile), j, 0o644)
			return []string{a, b}
		},
		"empty shard":   func() []string { return []string{a, t.TempDir()} },
		"missing shard": func() []string { return []string{a, filepath.Join(t.TempDir(), "nope")} },
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "merged")
			if _, err := MergeStores(out, mk()); err == nil {
				t.Fatal("merge accepted it")
			} else {
				t.Log(err)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a refused merge wrote the output directory")
			}
		})
	}
}

// A merge refused while copying (a symlink out of a run directory is found only then) leaves
// no half-written output: not a new OUT, nothing beside it, and nothing added to an existing
// one. The next attempt then needs no cleanup first.
func TestMergeRefusedMidwayLeavesNothing(t *testing.T) {
	good1, good2 := shardStore(t, "etcd-a"), shardStore(t, "etcd-b")
	bad := shardStore(t, "etcd-z")
	logs := filepath.Join(bad, "etcd-z", "20250201T000000.000Z", "logs")
	os.MkdirAll(logs, 0o755)
	if err := os.Symlink("/etc/passwd", filepath.Join(logs, "evil.log")); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "merged")
	if _, err := MergeStores(out, []string{good1, good2, bad}); err == nil || !strings.Contains(err.Error(), "symlink out of its run directory") {
		t.Fatalf("merge with a symlink out in the third shard: %v", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("a refused merge left %v beside OUT", names)
	}
	if _, err := MergeStores(out, []string{good1, good2}); err != nil {
		t.Fatalf("the next merge into the same OUT: %v", err)
	}
	// Into an existing store (the API allows it): what the failed merge added is removed.
	existing := t.TempDir()
	os.WriteFile(filepath.Join(existing, "keep.txt"), []byte("mine"), 0o644)
	if _, err := MergeStores(existing, []string{good1, good2, bad}); err == nil {
		t.Fatal("merge into an existing store accepted the symlink out")
	}
	if ents, _ := os.ReadDir(existing); len(ents) != 1 || ents[0].Name() != "keep.txt" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("an existing store after a refused merge holds %v, want only keep.txt", names)
	}
}
