package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// RoleLibrary labels images of an election library run as shipped (candidates/libraries/<folder>):
// the base plus the folder's Debian packages, its npm modules and its adapter files.
const RoleLibrary Role = "library"

// LibraryDir is where a library image holds the adapter (libraries.ImageDir).
const LibraryDir = "/splitbrain-lib"

// LibrarySpec is one library folder as the image needs it; internal/images does not import
// the libraries package (layers: it sits below it).
type LibrarySpec struct {
	Folder string   // the folder's name, for the tag's log lines and the npm cache key
	Debian []string // packages, pins as name=version
	Files  []LibraryFile
	// NPMPackage and NPMLock, when set, are the folder's package.json and lockfile: `npm ci`
	// fills LibraryDir/node_modules.
	NPMPackage, NPMLock []byte
}

// LibraryFile is one file of the adapter directory.
type LibraryFile struct {
	Name string
	Mode int64
	Data []byte
}

// LibraryPrepare is the adapter file the build runs once after copying the adapter in, when
// the folder has one (libraries.Prepare).
const LibraryPrepare = "prepare"

// libraryDockerfile installs the packages (libfaketime always: clock faults reach the
// process through LD_PRELOAD), copies the adapter and runs its prepare step. apt refuses a
// pin it cannot satisfy, so a library version that left the mirror fails the build by name.
func libraryDockerfile(parent string, spec LibrarySpec) string {
	pkgs := append([]string{"libfaketime"}, spec.Debian...)
	sort.Strings(pkgs)
	df := "# Election library run as shipped: libraries/" + spec.Folder + "\n" +
		"FROM " + parent + "\n" +
		"RUN apt-get update \\\n" +
		" && apt-get install -y --no-install-recommends " + strings.Join(pkgs, " ") + " \\\n" +
		" && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin\n" +
		"COPY lib " + LibraryDir + "\n"
	if slices.ContainsFunc(spec.Files, func(f LibraryFile) bool { return f.Name == LibraryPrepare }) {
		df += "RUN " + LibraryDir + "/" + LibraryPrepare + "\n"
	}
	return df + "ENTRYPOINT [\"" + LibraryDir + "/candidate\"]\n"
}

// EnsureLibrary returns the image of a library folder (local profile), building it when its
// tag is missing; the tag hashes the base, the packages and every file, modules included.
func EnsureLibrary(ctx context.Context, opts EnsureOptions, spec LibrarySpec) (Result, error) {
	if len(spec.Files) == 0 {
		return Result{}, fmt.Errorf("library %s: no files", spec.Folder)
	}
	return buildOnBase(ctx, opts, func(b *builder, baseRef, baseID string) (recipe, error) {
		files, err := libraryContext(ctx, b, spec)
		return recipe{role: RoleLibrary, parentID: baseID, dockerfile: libraryDockerfile(baseRef, spec), files: files}, err
	})
}

// libraryContext is the build context of a library image: the adapter's files under lib/
// and, for an npm folder, the cached node_modules tree beside them.
func libraryContext(ctx context.Context, b *builder, spec LibrarySpec) ([]contextFile, error) {
	files := []contextFile{{name: "lib", mode: 0o755, dir: true}}
	dirs := map[string]bool{}
	for _, f := range spec.Files {
		for d := filepath.Dir(f.Name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			files = append(files, contextFile{name: "lib/" + d, mode: 0o755, dir: true})
		}
		files = append(files, contextFile{name: "lib/" + f.Name, mode: f.Mode, data: f.Data})
	}
	if spec.NPMLock != nil {
		mods, err := npmModules(ctx, b.logf, "lib-"+spec.Folder, spec.NPMPackage, spec.NPMLock)
		if err != nil {
			return nil, &BuildError{Role: RoleLibrary, Step: "npm ci (" + spec.Folder + ")", Err: err}
		}
		tree, err := moduleTree(mods, "lib")
		if err != nil {
			return nil, &BuildError{Role: RoleLibrary, Step: "read node_modules (" + spec.Folder + ")", Err: err}
		}
		files = append(files, tree...)
	}
	return files, nil
}

// npmModules runs `npm ci` of a lockfile once into the cache directory (keyed by name and
// the lockfile's hash) and returns the directory holding node_modules. npm takes its
// registry from its own configuration; optional dependencies and install scripts are left
// out, so no native addon is built: the modules must be plain JavaScript.
//
// The install runs under a lock on the directory's name: without it two rows building the
// same library image at once both ran npm ci, and the second one's replace of the directory
// removed files under the first one's read of it (a bare machine's make chaos, node-etcd3:
// "node_modules/wrap-ansi: no such file or directory"). A complete directory is never
// replaced, so what a caller got stays whole while it reads.
func npmModules(ctx context.Context, logf func(string, ...any), name string, pkg, lock []byte) (string, error) {
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:])[:hashLen])
	complete := filepath.Join(out, ".complete")
	if _, err := os.Stat(complete); err == nil {
		return out, nil
	}
	unlock, err := lockTag(ctx, "npm-"+filepath.Base(out))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(complete); err == nil { // installed while this one waited
		return out, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("npm is not installed: apt-get install npm (make deps does it), or build on a machine that has it and copy " + out)
	}
	tmp, err := os.MkdirTemp(dir, "."+name+"-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), pkg, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, "package-lock.json"), lock, 0o644); err != nil {
		return "", err
	}
	logf("images: npm ci %s -> %s", name, out)
	cmd := hostCommand(ctx, npm, "ci", "--omit=optional", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w (npm takes its registry from its own configuration: npm config get registry)\n%s", err, tailLines(buf.String(), tailSize))
	}
	os.RemoveAll(out)
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	return out, os.WriteFile(complete, nil, 0o644)
}

// moduleTree is the node_modules tree under dir as build-context files below prefix, in a
// stable order with normalised modes, so the tag depends only on the lockfile's result.
func moduleTree(dir, prefix string) ([]contextFile, error) {
	root := filepath.Join(dir, "node_modules")
	var total int64
	var tree []contextFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		name := prefix + "/" + filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			tree = append(tree, contextFile{name: name, mode: 0o755, dir: true})
		case d.Type()&fs.ModeSymlink != 0:
			// npm links package binaries into node_modules/.bin; no adapter runs them.
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if total += info.Size(); total > maxModuleBytes {
				return fmt.Errorf("%s holds more than %d bytes", root, maxModuleBytes)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			mode := int64(0o644)
			if info.Mode()&0o111 != 0 {
				mode = 0o755
			}
			tree = append(tree, contextFile{name: name, mode: mode, data: data})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(tree, func(i, j int) bool { return tree[i].name < tree[j].name })
	if len(tree) == 0 {
		return nil, errors.New("empty node_modules")
	}
	return tree, nil
}
