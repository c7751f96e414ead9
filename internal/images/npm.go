package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// DynaliteVersion is the dynalite release in the local dynamodb image (pinned, with every
// dependency, by dockerfiles/dynalite/package-lock.json). 4.x declares Node >= 20; Debian
// bookworm ships nodejs 18.
const DynaliteVersion = "3.2.2"

// dynaliteFiles are the embedded files of the dynalite directory in the image's context.
var dynaliteFiles = []string{"package.json", "package-lock.json", "server.js"}

// dynaliteModules returns a directory holding node_modules for the dynamodb image, running
// `npm ci` from the embedded lockfile once into the cache directory (keyed by the lockfile's
// hash), like the etcd binary. npm uses its own configuration (registry included); optional
// dependencies are left out, so leveldown, a native addon, is not built: dynalite then keeps
// its data in memory. Install scripts are not run: nothing in the tree needs one.
func dynaliteModules(ctx context.Context, log io.Writer) (string, error) {
	lock := embedded("dynalite/package-lock.json")
	sum := sha256.Sum256(lock)
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "dynalite-"+DynaliteVersion+"-"+hex.EncodeToString(sum[:])[:hashLen])
	done := filepath.Join(out, ".complete")
	if _, err := os.Stat(done); err == nil {
		return out, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", &BuildError{Step: "npm ci (dynalite " + DynaliteVersion + ")",
			Err: errors.New("npm is not installed: apt-get install npm (make deps does it), or build on a machine that has it and copy " + out)}
	}
	tmp, err := os.MkdirTemp(dir, ".dynalite-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{"package.json", "package-lock.json"} {
		if err := os.WriteFile(filepath.Join(tmp, name), embedded("dynalite/"+name), 0o644); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(log, "images: npm ci dynalite %s -> %s\n", DynaliteVersion, out)
	cmd := exec.CommandContext(ctx, npm, "ci", "--omit=optional", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", &BuildError{Step: "npm ci (dynalite " + DynaliteVersion + ")", Log: tailLines(buf.String(), tailSize),
			Err: fmt.Errorf("%w (npm takes its registry from its own configuration: npm config get registry)", err)}
	}
	if _, err := os.Stat(filepath.Join(tmp, "node_modules", "dynalite", "package.json")); err != nil {
		return "", &BuildError{Step: "npm ci (dynalite " + DynaliteVersion + ")", Err: fmt.Errorf("npm ci left no node_modules/dynalite: %w", err)}
	}
	os.RemoveAll(out)
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	return out, os.WriteFile(done, nil, 0o644)
}

// maxModuleBytes bounds the node_modules tree read into a build context (9 MB today).
const maxModuleBytes = 64 << 20

// dynaliteContext is the dynalite directory of the dynamodb image's build context: the
// embedded files plus the cached node_modules tree, in a stable order with normalised modes,
// so the image tag depends only on the lockfile's result.
func dynaliteContext(modules string) ([]contextFile, error) {
	files := []contextFile{{name: "dynalite", mode: 0o755, dir: true}}
	for _, name := range dynaliteFiles {
		files = append(files, contextFile{name: "dynalite/" + name, mode: 0o644, data: embedded("dynalite/" + name)})
	}
	root := filepath.Join(modules, "node_modules")
	var total int64
	var tree []contextFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(modules, path)
		name := "dynalite/" + filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			tree = append(tree, contextFile{name: name, mode: 0o755, dir: true})
		case d.Type()&fs.ModeSymlink != 0:
			// npm links package binaries into node_modules/.bin; the server needs none.
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if total += info.Size(); total > maxModuleBytes {
				return fmt.Errorf("%s holds more than %d bytes: not the dynalite tree the lockfile gives", root, maxModuleBytes)
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
		return nil, &BuildError{Role: RoleDynamoDB, Step: "read " + root, Err: err}
	}
	sort.Slice(tree, func(i, j int) bool { return tree[i].name < tree[j].name })
	if len(tree) == 0 || !strings.HasPrefix(tree[0].name, "dynalite/node_modules") {
		return nil, &BuildError{Role: RoleDynamoDB, Step: "read " + root, Err: errors.New("empty node_modules")}
	}
	return append(files, tree...), nil
}
