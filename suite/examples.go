package suite

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
)

// Rows may run a candidate of examples/ (or any candidate in the source tree) instead of a Go
// recipe: `candidate:` names a script or executable file, or a Go main package directory that
// is built static (with `build_tags:`), relative to the module root; `packages:` are the
// Debian packages a script needs (harness --candidate-packages).

// moduleRoot walks up from dir to the directory holding go.mod.
func moduleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the matrix file: candidate paths are relative to the module root")
		}
		dir = parent
	}
}

// candidateLabel names an example candidate in row names: examples/python/candidate.py →
// python-candidate; a Go package with tags → go-broken.
func (r *Row) candidateLabel() string {
	p := strings.TrimPrefix(filepath.ToSlash(r.Candidate), "examples/")
	p = strings.TrimSuffix(p, filepath.Ext(p))
	p = strings.ReplaceAll(p, "/", "-")
	for _, t := range r.BuildTags {
		p += "-" + t
	}
	return p
}

// checkCandidate validates the candidate keys of a row.
func (r *Row) checkCandidate(root string) []error {
	var errs []error
	if r.Candidate == "" {
		if len(r.Packages) > 0 || len(r.BuildTags) > 0 {
			errs = append(errs, errors.New("packages and build_tags need candidate: (a script or Go package under the module root)"))
		}
		return errs
	}
	if r.Recipe != "" {
		errs = append(errs, fmt.Errorf("recipe %q and candidate %q exclude each other: give one", r.Recipe, r.Candidate))
	}
	if root == "" {
		return errs
	}
	fi, err := os.Stat(filepath.Join(root, r.Candidate))
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("candidate %q: %v (paths are relative to the module root)", r.Candidate, err))
	case fi.IsDir() && len(r.Packages) > 0:
		errs = append(errs, fmt.Errorf("candidate %q is a Go package: it is built static and needs no packages", r.Candidate))
	case !fi.IsDir() && len(r.BuildTags) > 0:
		errs = append(errs, fmt.Errorf("build_tags apply to a Go package directory, not the file %q", r.Candidate))
	}
	if len(r.Packages) > 0 {
		if _, err := images.ParsePackages(strings.Join(r.Packages, ",")); err != nil {
			errs = append(errs, fmt.Errorf("packages: %v", err))
		}
	}
	return errs
}

var (
	goBuildMu    sync.Mutex
	goBuildCache = map[string]*goBuild{}
)

// goBuild is one Go candidate build of this process: its output path, or why it failed.
type goBuild struct {
	out      string
	err      error
	reported bool // candidatePath printed err once
}

// BuildCandidate returns the executable of the row's candidate: the file itself, or the Go
// main package directory built static into the cache (once per process; go build skips
// up-to-date work). A failed build's error carries go build's output: assess reports it
// before any check instead of one harness error per check.
func (r Row) BuildCandidate(root string) (string, error) {
	b := r.build(root)
	return b.out, b.err
}

// candidateOut is where the row's candidate executable is or will be: the file itself, or,
// for a Go main package directory (pkg true), its build's output in the cache.
func (r Row) candidateOut(root string) (out string, pkg bool) {
	src := filepath.Join(root, r.Candidate)
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return src, false
	}
	cache := os.Getenv("SPLITBRAIN_CACHE_DIR")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache", "splitbrain")
		} else {
			cache = os.TempDir()
		}
	}
	return filepath.Join(cache, "examples", r.candidateLabel()), true
}

func (r Row) build(root string) *goBuild {
	src := filepath.Join(root, r.Candidate)
	out, pkg := r.candidateOut(root)
	if !pkg {
		return &goBuild{out: out}
	}
	key := src + " " + strings.Join(r.BuildTags, ",")
	goBuildMu.Lock()
	defer goBuildMu.Unlock()
	if b, ok := goBuildCache[key]; ok {
		return b
	}
	args := []string{"build", "-trimpath", "-o", out}
	if len(r.BuildTags) > 0 {
		args = append(args, "-tags", strings.Join(slices.Clone(r.BuildTags), ","))
	}
	// Built from its own directory, so a package of another module (a user's, for assess)
	// builds with that module's go.mod.
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b := &goBuild{out: out}
	if output, err := cmd.CombinedOutput(); err != nil {
		b.err = fmt.Errorf("go build %s: %v (a directory is built as a Go main package; give an executable file, or the directory of a main package and its go.mod)\n%s",
			r.Candidate, err, strings.TrimSpace(string(output)))
	}
	goBuildCache[key] = b
	return b
}

// candidatePath is the executable of a row's candidate (BuildCandidate). A failed build
// leaves a path that does not exist, so the harness names the problem; the build's output
// goes to stderr once.
func candidatePath(root string, r Row) string {
	b := r.build(root)
	if b.err == nil {
		return b.out
	}
	goBuildMu.Lock()
	if !b.reported {
		b.reported = true
		fmt.Fprintf(os.Stderr, "suite: %v\n", b.err)
	}
	goBuildMu.Unlock()
	return b.out + ".build-failed"
}
