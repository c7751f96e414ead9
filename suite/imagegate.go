package suite

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// imageGate says which images a row needs that do not exist yet, and builds them. With
// several rows at once (RunCases), the images every row needs (base, tools, candidate) are
// built first, alone; each store server's image is built in the background, at the lowest
// CPU weight, while the rows whose images exist run, and a row starts once its images are
// there (backgroundBuilds).
type imageGate interface {
	// unbuilt lists the images c needs that do not exist yet.
	unbuilt(c Case) []images.Role
	// build makes roles present for c's profile (also when it fails, the row runs and
	// reports its own error); background builds yield the CPU to runs going on beside them.
	build(ctx context.Context, c Case, roles []images.Role, background bool) error
}

// engineGate is the imageGate of a real engine. A role counts as built when any image of the
// project carries its label (and the run's salt): the builds that take minutes are the first of each role; an
// older image brought up to date rebuilds one cheap layer (or one warm Go build).
type engineGate struct {
	pool  *harness.StorePool // nil = no reuse: ensure without caching
	log   io.Writer
	mu    sync.Mutex // builds run beside the scheduler
	built map[images.Role]bool
}

// newEngineGate lists the project's images once; nil when no engine answers (the rows then
// fail with the engine's own error).
func newEngineGate(ctx context.Context, pool *harness.StorePool, log io.Writer) imageGate {
	eng, err := platform.Connect(ctx)
	if err != nil {
		return nil
	}
	defer eng.Close()
	imgs, err := eng.ProjectImages(ctx)
	if err != nil {
		return nil
	}
	g := &engineGate{pool: pool, log: log, built: map[images.Role]bool{}}
	salt := os.Getenv(images.EnvSalt)
	for _, img := range imgs {
		if countsAsBuilt(img, salt) {
			g.built[images.Role(img.Role)] = true
		}
	}
	return g
}

func (g *engineGate) unbuilt(c Case) []images.Role {
	profile, roles, err := harness.ImageRoles(c.Config)
	if err != nil || profile != images.ProfileLocal {
		return nil // the run reports a bad config itself; official images are pulled, not built
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []images.Role
	for _, r := range roles {
		if !g.built[r] {
			out = append(out, r)
		}
	}
	return out
}

func (g *engineGate) build(ctx context.Context, c Case, roles []images.Role, background bool) error {
	profile, _, err := harness.ImageRoles(c.Config)
	if err != nil {
		return err
	}
	switch {
	case g.pool != nil && background:
		err = g.pool.EnsureImagesInBackground(ctx, profile, g.log, roles...)
	case g.pool != nil:
		err = g.pool.EnsureImages(ctx, profile, g.log, roles...)
	default:
		_, _, err = images.EnsureWith(ctx, profile, images.EnsureOptions{Log: g.log, Background: background}, roles...)
	}
	if err == nil {
		g.mu.Lock()
		for _, r := range roles {
			g.built[r] = true
		}
		g.mu.Unlock()
	}
	return err
}

// roleNames joins roles for a progress line.
func roleNames(roles []images.Role) string {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// countsAsBuilt: a tagged image of the run's salt. A salted run (SPLITBRAIN_IMAGE_SALT: every
// tag new, as on a bare machine) counts only the images of its own salt; an unsalted one only
// unsalted images.
func countsAsBuilt(img platform.Image, salt string) bool {
	return len(img.Refs) > 0 && img.Labels[images.LabelSalt] == salt
}
