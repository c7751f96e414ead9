package libraries

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	imagebuild "github.com/splitbrain-chaos/splitbrain/internal/images"
)

// Every entry's folder builds an image recipe: a launcher, a runtime, pinned versions.
func TestRegistry(t *testing.T) {
	if err := Check(Registry); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	runtimes := map[string]bool{}
	for _, r := range Registry {
		if seen[r.Name] {
			t.Errorf("%s listed twice", r.Name)
		}
		seen[r.Name] = true
		img, err := r.Image()
		if err != nil {
			t.Fatal(err)
		}
		runtimes[img.Runtime] = true
		if !strings.Contains(r.Describe().Summary, img.Versions[0]) {
			t.Errorf("%s: summary %q does not name the version", r.Name, r.Describe().Summary)
		}
		tm := r.TimingFor(contract.Config{LeaseTTL: 2 * time.Second, WriteInterval: 50 * time.Millisecond})
		if tm.TTL <= 0 || tm.HandoffBound <= 0 || tm.FailoverBound < tm.HandoffBound {
			t.Errorf("%s: implausible timing %+v", r.Name, tm)
		}
		if r.Variant == AsRecommended && r.Advice == "" {
			t.Errorf("%s: a recommended variant says what it adds and where the docs say so (Advice)", r.Name)
		}
		if _, err := r.NewRecipe(t.Context(), runtime.Env{}); err == nil {
			t.Errorf("%s: NewRecipe must refuse: the adapter is not Go", r.Name)
		}
	}
	if len(runtimes) < 3 {
		t.Errorf("libraries in %d runtimes, want at least 3 besides Go: %v", len(runtimes), runtimes)
	}
}

func TestImageRecipeErrors(t *testing.T) {
	launcher := &fstest.MapFile{Data: []byte("#!/bin/sh\n"), Mode: 0o755}
	for _, c := range []struct {
		name  string
		files fstest.MapFS
		want  string
	}{
		{"no image file", fstest.MapFS{"x/candidate": launcher}, "no image file"},
		{"unknown key", fstest.MapFS{"x/image": {Data: []byte("runtime python\npip foo\n")}, "x/candidate": launcher}, `unknown key "pip"`},
		{"bad runtime", fstest.MapFS{"x/image": {Data: []byte("runtime ruby\n")}, "x/candidate": launcher}, "runtime takes one of"},
		{"nothing pinned", fstest.MapFS{"x/image": {Data: []byte("runtime python\ndebian python3\n")}, "x/candidate": launcher}, "pins no library version"},
		{"bad package", fstest.MapFS{"x/image": {Data: []byte("runtime python\ndebian Python3=1\n")}, "x/candidate": launcher}, "not a Debian package name"},
		{"no launcher", fstest.MapFS{"x/image": {Data: []byte("runtime python\ndebian python3-redis=4.3.4-3\n")}}, "no launcher"},
		{"npm unresolved", fstest.MapFS{"x/image": {Data: []byte("runtime node\nnpm\n")}, "x/candidate": launcher,
			"x/package.json": {Data: []byte(`{"dependencies":{"redlock":"4.2.0"}}`)}, "x/package-lock.json": {Data: []byte(`{"packages":{}}`)}}, "does not resolve redlock"},
	} {
		_, err := readImage(c.files, "x")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %q", c.name, err, c.want)
		}
	}
	img, err := readImage(fstest.MapFS{"x/image": {Data: []byte("# c\nruntime node # the runtime\ndebian nodejs libfoo=1.2-3\nnpm\n")}, "x/candidate": launcher,
		"x/package.json":            {Data: []byte(`{"dependencies":{"redlock":"4.2.0"}}`)},
		"x/package-lock.json":       {Data: []byte(`{"packages":{"node_modules/redlock":{"version":"4.2.0"}}}`)},
		"common/node/splitbrain.js": {Data: []byte("//")}}, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(img.Versions, "; "); got != "libfoo 1.2-3 (Debian); redlock 4.2.0 (npm)" {
		t.Errorf("versions %q", got)
	}
	names := map[string]int64{}
	for _, f := range img.Files {
		names[f.Name] = f.Mode
	}
	if names["candidate"] != 0o755 || names["splitbrain.js"] != 0o644 || len(names) != 5 {
		t.Errorf("files %v: want the folder's four and the runtime helper, the launcher executable", names)
	}
}

func TestWholeSeconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		min  float64
		want time.Duration
	}{{1500 * time.Millisecond, 2, 2 * time.Second}, {2001 * time.Millisecond, 2, 3 * time.Second}, {300 * time.Millisecond, 1, time.Second}, {5 * time.Second, 2, 5 * time.Second}} {
		if got := wholeSeconds(c.d, c.min); got != c.want {
			t.Errorf("wholeSeconds(%v, %v) = %v, want %v", c.d, c.min, got, c.want)
		}
	}
}

// The Python and Node helpers print the leader-work step (the work gap), so their recipes
// declare it and assess's zombie-window applies; Java and shell adapters do not print it.
func TestWorkGapStepDeclared(t *testing.T) {
	for name, want := range map[string]bool{"kazoo-election": true, "node-redlock": true, "curator-leaderlatch": false, "etcdctl-lock": false} {
		r, ok := Lookup(name)
		if !ok {
			t.Fatalf("no recipe %s", name)
		}
		got := slices.Contains(r.Describe().Steps, runtime.StepLeaderWork)
		if got != want {
			t.Errorf("%s declares leader-work: %v, want %v", name, got, want)
		}
	}
}

// TestImageCopiesItsLists: a recipe's folder is read once (a matrix load describes every
// recipe once per row), so each caller must get lists of its own.
func TestImageCopiesItsLists(t *testing.T) {
	r := Registry[0]
	first, err := r.Image()
	if err != nil || len(first.Versions) == 0 || len(first.Files) == 0 {
		t.Fatalf("%s: image %+v, %v", r.Name, first, err)
	}
	first.Versions[0], first.Files[0].Name = "changed", "changed"
	second, _ := r.Image()
	if second.Versions[0] == "changed" || second.Files[0].Name == "changed" {
		t.Errorf("%s: a caller's change to its Image reached the next caller", r.Name)
	}
}

// The curator adapter compiles in the image build (prepare), executable like the launcher;
// the name is the one the image build runs.
func TestPrepareRunsInTheBuild(t *testing.T) {
	if Prepare != imagebuild.LibraryPrepare {
		t.Fatalf("libraries.Prepare %q, imagebuild.LibraryPrepare %q", Prepare, imagebuild.LibraryPrepare)
	}
	r, _ := Lookup("curator-leaderlatch")
	img, err := r.Image()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(img.Files, func(f File) bool { return f.Name == Prepare })
	if i < 0 || img.Files[i].Mode != 0o755 {
		t.Fatalf("curator's prepare missing or not executable: %+v", img.Files)
	}
}
