// Package libraries holds the election libraries splitbrain runs as shipped: each is a
// folder here (a thin adapter in the library's own language, its launcher and its image
// recipe) and one entry in Registry. The harness builds the folder into a candidate image
// (the Debian base plus the packages, npm modules and runtime helper the recipe names) and
// runs its launcher with the entry's arguments; the adapter speaks the candidate contract
// (docs/candidates.md) and adds no safety of its own (docs/libraries.md).
package libraries

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
)

// folders holds every library folder and the runtime helpers in common/.
//
//go:embed */*
var folders embed.FS

// Variants: what a recipe's adapter follows.
const (
	// AsShipped: the library's election API as its README or main example shows it.
	AsShipped = "as shipped"
	// AsRecommended: the same API plus the extra safety the library's own docs recommend
	// (a state listener, renewal, a token check); the adapter still adds nothing of its own.
	AsRecommended = "as recommended"
)

// Recipe is one library recipe: a folder's adapter run with fixed arguments. It is a
// runtime.Definition, so it is listed and looked up with the Go recipes
// (candidates.Registry); NewRecipe refuses, since the adapter is not Go.
type Recipe struct {
	Name    string // the recipe name (--recipe)
	Store   string // contract.Store*
	Folder  string // the folder under libraries/ holding the adapter
	Args    []string
	Summary string
	// Variant is AsShipped or AsRecommended; Advice says what the recommended variant adds
	// and where the library's docs say so.
	Variant string
	Advice  string
	// Token says where the fencing token comes from. Unfenced recipes have no token the
	// library gives: their adapter derives a label from the acquisition, and their rows
	// run on the unfenced resource.
	Token  string
	Fenced bool
	// Fences: the adapter powers nodes off through the run's fence device (STONITH), so the
	// fence-* faults act on it and assess runs its fence checks.
	Fences bool
	// NoClockFaults says why clock faults do not reach its candidates ("": libfaketime
	// carries them, as for every other library).
	NoClockFaults string
	Timing        func(c contract.Config) runtime.Timing
	// Upstream: issues, docs and pull requests this recipe's rows speak to.
	Upstream []string
}

func (r Recipe) Describe() runtime.Info {
	info := runtime.Info{Name: r.Name, Store: r.Store, Summary: r.Summary + " [" + r.Variant + "; " + r.Library() + "]",
		Fences: r.Fences, NoClockFaults: r.NoClockFaults}
	if img, err := r.Image(); err == nil && workGapRuntimes[img.Runtime] {
		info.Steps = []string{runtime.StepLeaderWork}
	}
	return info
}

// workGapRuntimes are the runtimes whose contract helper (common/<runtime>) opens the Go
// runtime's work gap when SPLITBRAIN_LEADER_WORK is set: between the adapter's check of
// what its library tells it and the write, it prints step leader-work and waits, so the
// zombie window can be hit on its event (pause:on=step:leader-work, assess's zombie-window).
var workGapRuntimes = map[string]bool{"python": true, "node": true}

func (r Recipe) TimingFor(c contract.Config) runtime.Timing { return r.Timing(c) }
func (r Recipe) NewRecipe(context.Context, runtime.Env) (runtime.Recipe, error) {
	return nil, fmt.Errorf("recipe %s runs its %s adapter in its own image, not in the Go runtime: run it with splitbrain run --recipe %s", r.Name, r.Folder, r.Name)
}

// Library is the recipe's library with its pinned versions, e.g. "python3-kazoo 2.8.0-2 (Debian)".
func (r Recipe) Library() string {
	img, err := r.Image()
	if err != nil {
		return "image recipe: " + err.Error()
	}
	return strings.Join(img.Versions, ", ")
}

// Runtimes a folder's image recipe can name; each adds its helper from common/<runtime>.
const (
	RuntimePython = "python"
	RuntimeNode   = "node"
	RuntimeJava   = "java"
	RuntimeShell  = "shell"
)

var runtimes = []string{RuntimePython, RuntimeNode, RuntimeJava, RuntimeShell}

// runtimePackages are the Debian packages every image of a runtime gets (not pinned: the
// runtime is not what is analysed; results record the library's pins).
var runtimePackages = map[string][]string{
	RuntimePython: {"python3"},
	RuntimeNode:   {"nodejs"},
	RuntimeJava:   {"openjdk-17-jre-headless"},
}

// Image is a folder's image recipe (its file "image") with the files the image holds.
type Image struct {
	Runtime string
	// Debian packages to install; a library package is pinned as name=version.
	Debian []string
	// NPM: the folder holds package.json and package-lock.json; the image gets
	// node_modules from `npm ci` of that lockfile.
	NPM bool
	// Versions are what the run records: every pinned Debian package and every direct npm
	// dependency, with where it comes from.
	Versions []string
	// Files are the folder's files and the runtime's helper, by name relative to the
	// image's adapter directory (ImageDir).
	Files []File
}

// File is one file of the adapter directory.
type File struct {
	Name string
	Mode int64
	Data []byte
}

// ImageDir is where a library image holds the adapter; its launcher is ImageDir/candidate.
const ImageDir = "/splitbrain-lib"

// Launcher is the folder's executable every run starts, with the recipe's Args.
const Launcher = "candidate"

// Prepare, when the folder has it, is run once by the image build after the folder is copied
// in (compiling the adapter's sources), so no candidate start repeats that work.
const Prepare = "prepare"

var debianName = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]+$`)

var pinned = regexp.MustCompile(`^([a-z0-9][a-z0-9.+-]+)=([A-Za-z0-9.+~:-]+)$`)

// Image reads the recipe's folder: its image file, its files and the runtime helper. The
// folders are embedded, so each is read once: a matrix load describes every recipe once per
// row, and reading the folders (npm lockfiles included) each time cost it 5 s.
func (r Recipe) Image() (Image, error) {
	c, _ := images.LoadOrStore(r.Folder, sync.OnceValues(func() (Image, error) { return readImage(folders, r.Folder) }))
	img, err := c.(func() (Image, error))()
	// Copies of the lists: a caller may change its Image.
	img.Debian, img.Versions, img.Files = slices.Clone(img.Debian), slices.Clone(img.Versions), slices.Clone(img.Files)
	return img, err
}

// images holds each folder's readImage, by folder name.
var images sync.Map

func readImage(fsys fs.FS, folder string) (Image, error) {
	var img Image
	raw, err := fs.ReadFile(fsys, folder+"/image")
	if err != nil {
		return img, fmt.Errorf("candidates/libraries/%s: no image file: %w", folder, err)
	}
	for i, line := range strings.Split(string(raw), "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		bad := func(why string) error {
			return fmt.Errorf("candidates/libraries/%s/image line %d: %s (lines: runtime python|node|java|shell; debian PKG[=VERSION]...; npm)", folder, i+1, why)
		}
		switch f[0] {
		case "runtime":
			if len(f) != 2 || !slices.Contains(runtimes, f[1]) {
				return img, bad("runtime takes one of " + strings.Join(runtimes, ", "))
			}
			img.Runtime = f[1]
		case "debian":
			for _, p := range f[1:] {
				if m := pinned.FindStringSubmatch(p); m != nil {
					img.Versions = append(img.Versions, m[1]+" "+m[2]+" (Debian)")
				} else if !debianName.MatchString(p) {
					return img, bad(fmt.Sprintf("%q is not a Debian package name", p))
				}
				img.Debian = append(img.Debian, p)
			}
		case "npm":
			if len(f) != 1 {
				return img, bad("npm takes no arguments: the folder's package-lock.json pins the modules")
			}
			img.NPM = true
		default:
			return img, bad(fmt.Sprintf("unknown key %q", f[0]))
		}
	}
	if img.Runtime == "" {
		return img, fmt.Errorf("candidates/libraries/%s/image names no runtime", folder)
	}
	for _, p := range runtimePackages[img.Runtime] {
		if !slices.ContainsFunc(img.Debian, func(d string) bool { return d == p || strings.HasPrefix(d, p+"=") }) {
			img.Debian = append(img.Debian, p)
		}
	}
	if img.NPM {
		v, err := npmVersions(fsys, folder)
		if err != nil {
			return img, err
		}
		img.Versions = append(img.Versions, v...)
	}
	if len(img.Versions) == 0 {
		return img, fmt.Errorf("candidates/libraries/%s/image pins no library version: write the library's package as name=version", folder)
	}
	add := func(root, prefix string) error {
		return fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			name := strings.TrimPrefix(p, prefix)
			mode := int64(0o644)
			if name == Launcher || name == Prepare || strings.HasSuffix(name, ".sh") {
				mode = 0o755
			}
			img.Files = append(img.Files, File{Name: name, Mode: mode, Data: data})
			return nil
		})
	}
	if err := add(folder, folder+"/"); err != nil {
		return img, err
	}
	if _, err := fs.Stat(fsys, path.Join("common", img.Runtime)); err == nil {
		if err := add(path.Join("common", img.Runtime), "common/"+img.Runtime+"/"); err != nil {
			return img, err
		}
	}
	if !slices.ContainsFunc(img.Files, func(f File) bool { return f.Name == Launcher }) {
		return img, fmt.Errorf("candidates/libraries/%s has no launcher %q", folder, Launcher)
	}
	return img, nil
}

// npmVersions reads the direct dependencies of a folder's package.json at the versions its
// lockfile resolves.
func npmVersions(fsys fs.FS, folder string) ([]string, error) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := readJSON(fsys, folder+"/package.json", &pkg); err != nil {
		return nil, err
	}
	if err := readJSON(fsys, folder+"/package-lock.json", &lock); err != nil {
		return nil, err
	}
	var out []string
	for _, name := range sortedKeys(pkg.Dependencies) {
		p, ok := lock.Packages["node_modules/"+name]
		if !ok || p.Version == "" {
			return nil, fmt.Errorf("candidates/libraries/%s/package-lock.json does not resolve %s: run npm install --package-lock-only there", folder, name)
		}
		out = append(out, name+" "+p.Version+" (npm)")
	}
	return out, nil
}

// Check reads every recipe's folder (TestRegistry runs it): a broken image recipe is found
// before any image is built.
func Check(recipes []Recipe) error {
	var errs []error
	for _, r := range recipes {
		if r.Timing == nil || r.Folder == "" || (r.Variant != AsShipped && r.Variant != AsRecommended) {
			errs = append(errs, fmt.Errorf("library recipe %s: needs Folder, Timing and Variant %q or %q", r.Name, AsShipped, AsRecommended))
			continue
		}
		if _, err := r.Image(); err != nil {
			errs = append(errs, fmt.Errorf("library recipe %s: %w", r.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Definitions returns the registry as runtime definitions, for candidates.Registry.
func Definitions() []runtime.Definition {
	out := make([]runtime.Definition, len(Registry))
	for i, r := range Registry {
		out[i] = r
	}
	return out
}

// Lookup returns the library recipe called name.
func Lookup(name string) (Recipe, bool) {
	for _, r := range Registry {
		if r.Name == name {
			return r, true
		}
	}
	return Recipe{}, false
}

// faketimeLib is libfaketime's preload library in a library image (Debian's libfaketime).
func faketimeLib() string {
	if goruntime.GOARCH == "arm64" {
		return "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1"
	}
	return "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
}

// FaketimeEnv is the environment that puts an adapter's process under libfaketime, reading
// its offset from file (the nemesis rewrites it on a clock fault). Only the wall clock
// moves: CLOCK_MONOTONIC is left alone (FAKETIME_DONT_FAKE_MONOTONIC), so the contract's
// event stamps stay the host's monotonic clock and so do the runtime's timers. Java reads
// the file at most once a second (FAKETIME_CACHE_DURATION): the JVM reads the wall clock so
// often that re-reading it on every call slows it down; the others re-read on every call.
// The JVM also needs FAKETIME_FORCE_MONOTONIC_FIX=0: its timed waits are
// pthread_cond_timedwait on CLOCK_MONOTONIC, and Debian's libfaketime 0.9.10 applies its
// "monotonic fix" to them after detecting this glibc, which with the monotonic clock left
// alone ends them early: Object.wait(1000) returned after 1-60 ms, LockSupport.parkNanos at
// once, and an idle JVM's threads spun at 0.6 of a core (docs/faults.md).
func (img Image) FaketimeEnv(file string) map[string]string {
	env := map[string]string{
		"LD_PRELOAD":                   faketimeLib(),
		"FAKETIME_TIMESTAMP_FILE":      file,
		"FAKETIME_DONT_FAKE_MONOTONIC": "1",
		"FAKETIME_NO_CACHE":            "1",
	}
	if img.Runtime == RuntimePython {
		// common/python/sitecustomize.py: time.sleep without clock_nanosleep, which
		// libfaketime 0.9.10 breaks when it leaves the monotonic clock alone.
		env["PYTHONPATH"] = ImageDir
	}
	if img.Runtime == RuntimeJava {
		delete(env, "FAKETIME_NO_CACHE")
		env["FAKETIME_CACHE_DURATION"] = "1"
		env["FAKETIME_FORCE_MONOTONIC_FIX"] = "0"
	}
	return env
}
