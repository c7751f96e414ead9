package suite

import (
	"context"
	"io"
	"slices"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// imageGate decides which rows must have images built before they start. With several rows
// at once, a build (debootstrap, a cold Go build of a server: minutes of both cores) must not
// run beside a row's fault phase, whose timing bounds it would bend; so such a row waits until
// no row runs and its images are built alone (RunCases). Rows whose images exist start at once.
type imageGate interface {
	// unbuilt lists the images c needs that do not exist yet.
	unbuilt(c Case) []images.Role
	// build makes them present (also when it fails, the row runs and reports its own error).
	build(ctx context.Context, c Case) error
}

// engineGate is the imageGate of a real engine. A role counts as built when any image of the
// project carries its label: the builds that take minutes are the first of each role; an
// older image brought up to date rebuilds one cheap layer (or one warm Go build).
type engineGate struct {
	pool  *harness.StorePool // nil = no reuse: ensure without caching
	log   io.Writer
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
	for _, img := range imgs {
		if len(img.Refs) > 0 {
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
	var out []images.Role
	for _, r := range roles {
		if !g.built[r] {
			out = append(out, r)
		}
	}
	return out
}

func (g *engineGate) build(ctx context.Context, c Case) error {
	profile, roles, err := harness.ImageRoles(c.Config)
	if err != nil {
		return err
	}
	if g.pool != nil {
		err = g.pool.EnsureImages(ctx, profile, g.log, roles...)
	} else {
		_, _, err = images.EnsureWith(ctx, profile, images.EnsureOptions{Log: g.log}, roles...)
	}
	if err == nil {
		for _, r := range roles {
			g.built[r] = true
		}
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
