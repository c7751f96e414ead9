package images

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// DynaliteVersion is the dynalite release in the local dynamodb image (pinned, with every
// dependency, by dockerfiles/dynalite/package-lock.json). 4.x declares Node >= 20; Debian
// bookworm ships nodejs 18.
const DynaliteVersion = "3.2.2"

// dynaliteFiles are the embedded files of the dynalite directory in the image's context.
var dynaliteFiles = []string{"package.json", "package-lock.json", "server.js"}

// dynaliteModules returns a directory holding node_modules for the dynamodb image: `npm ci`
// of the embedded lockfile, once, into the cache directory (npmModules). Optional
// dependencies are left out, so leveldown, a native addon, is not built: dynalite then keeps
// its data in memory.
func dynaliteModules(ctx context.Context, log io.Writer) (string, error) {
	logf := func(format string, args ...any) { fmt.Fprintf(log, format+"\n", args...) }
	out, err := npmModules(ctx, logf, "dynalite-"+DynaliteVersion, embedded("dynalite/package.json"), embedded("dynalite/package-lock.json"))
	if err != nil {
		return "", &BuildError{Role: storekinds.DynamoDB, Step: "npm ci (dynalite " + DynaliteVersion + ")", Err: err}
	}
	if _, err := os.Stat(filepath.Join(out, "node_modules", "dynalite", "package.json")); err != nil {
		return "", &BuildError{Role: storekinds.DynamoDB, Step: "npm ci (dynalite " + DynaliteVersion + ")", Err: fmt.Errorf("npm ci left no node_modules/dynalite: %w", err)}
	}
	return out, nil
}

// maxModuleBytes bounds a node_modules tree read into a build context (dynalite: 9 MB).
const maxModuleBytes = 64 << 20

// dynaliteContext is the dynalite directory of the dynamodb image's build context: the
// embedded files plus the cached node_modules tree.
func dynaliteContext(modules string) ([]contextFile, error) {
	files := []contextFile{{name: "dynalite", mode: 0o755, dir: true}}
	for _, name := range dynaliteFiles {
		files = append(files, contextFile{name: "dynalite/" + name, mode: 0o644, data: embedded("dynalite/" + name)})
	}
	tree, err := moduleTree(modules, "dynalite")
	if err != nil {
		return nil, &BuildError{Role: storekinds.DynamoDB, Step: "read " + filepath.Join(modules, "node_modules"), Err: err}
	}
	return append(files, tree...), nil
}
