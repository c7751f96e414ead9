package harness

import (
	"context"
	"fmt"
	"io"

	"github.com/splitbrain-chaos/splitbrain/candidates/libraries"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
)

// libraryCandidate is a library recipe as a run needs it: the image to build and the
// environment that puts its process under libfaketime.
type libraryCandidate struct {
	recipe      libraries.Recipe
	spec        images.LibrarySpec
	versions    []string
	faketimeEnv map[string]string
}

func newLibraryCandidate(lib libraries.Recipe) (*libraryCandidate, error) {
	img, err := lib.Image()
	if err != nil {
		return nil, err
	}
	spec := images.LibrarySpec{Folder: lib.Folder, Debian: img.Debian}
	for _, f := range img.Files {
		switch f.Name {
		case "package.json":
			spec.NPMPackage = f.Data
		case "package-lock.json":
			spec.NPMLock = f.Data
		}
		spec.Files = append(spec.Files, images.LibraryFile{Name: f.Name, Mode: f.Mode, Data: f.Data})
	}
	if !img.NPM {
		spec.NPMPackage, spec.NPMLock = nil, nil
	}
	return &libraryCandidate{recipe: lib, spec: spec, versions: img.Versions,
		faketimeEnv: img.FaketimeEnv(candidateFaketimeFile)}, nil
}

// libraryRecipe is the library recipe the run's candidates are, if they are one.
func (c *Config) libraryRecipe() (libraries.Recipe, bool) {
	if c.Recipe == "" || c.CandidateCmd != "" || c.CandidateImage != "" {
		return libraries.Recipe{}, false
	}
	return libraries.Lookup(c.Recipe)
}

// EnsureLibraryImage builds (or finds) the image of recipe when it is a library recipe, so a
// caller that runs many checks (assess) builds it once, before its budget starts.
func EnsureLibraryImage(ctx context.Context, log io.Writer, recipe string) error {
	lib, ok := libraries.Lookup(recipe)
	if !ok {
		return nil
	}
	lc, err := newLibraryCandidate(lib)
	if err != nil {
		return err
	}
	if _, err := images.EnsureLibrary(ctx, images.EnsureOptions{Log: log}, lc.spec); err != nil {
		return fmt.Errorf("library image %s: %w", lib.Folder, err)
	}
	return nil
}

// DefaultResourceFor is the resource mode a run of recipe gets when none is given: unfenced
// for a library that gives no fencing token (a fenced resource would add safety the library
// lacks: the only token there is the adapter's label), fenced otherwise.
func DefaultResourceFor(recipe string) string {
	if lib, ok := libraries.Lookup(recipe); ok && !lib.Fenced {
		return "unfenced"
	}
	return DefaultResourceMode
}
