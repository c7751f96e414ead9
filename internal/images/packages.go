package images

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// RolePackages labels images of the base plus Debian packages a script candidate needs
// (`splitbrain run --candidate-packages python3,python3-redis`). They are not in Roles: a
// run asks for one only when given packages, and its tag depends on them.
const RolePackages Role = "candidate-packages"

// debianPackageName is Debian policy's package name syntax (§5.6.1), with an optional
// ":arch" qualifier left out on purpose: the image has one architecture.
var debianPackageName = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]+$`)

// maxPackages bounds --candidate-packages; a candidate needing more wants its own image.
const maxPackages = 30

// ParsePackages splits a comma-separated list of Debian package names, sorted and without
// duplicates (so the image tag does not depend on the order given).
func ParsePackages(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !debianPackageName.MatchString(p) {
			return nil, fmt.Errorf("%.60q is not a Debian package name (lower-case letters, digits, '.', '+', '-'; e.g. python3-redis)", p)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxPackages {
		return nil, fmt.Errorf("%d packages: at most %d; build your own image FROM the base instead (docs/candidates.md)", len(out), maxPackages)
	}
	return out, nil
}

// packagesDockerfile installs the packages on the base. apt installs no recommends (the
// base's apt configuration), so the list names everything the candidate needs.
func packagesDockerfile(parent string, pkgs []string) string {
	return "# Script candidate runtime: the base plus named Debian packages.\n" +
		"FROM " + parent + "\n" +
		"RUN apt-get update \\\n" +
		" && apt-get install -y --no-install-recommends " + strings.Join(pkgs, " ") + " \\\n" +
		" && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin\n"
}

// EnsurePackages returns the image of the base plus pkgs (local profile), building it when
// its tag is missing. The tag hashes the package list and the base image's ID, so it is
// built once per list and base; an unknown package fails the build with apt's message.
func EnsurePackages(ctx context.Context, opts EnsureOptions, pkgs []string) (Result, error) {
	if len(pkgs) == 0 {
		return Result{}, fmt.Errorf("no packages given")
	}
	return buildOnBase(ctx, opts, func(b *builder, baseRef, baseID string) (recipe, error) {
		return recipe{role: RolePackages, parentID: baseID, dockerfile: packagesDockerfile(baseRef, pkgs)}, nil
	})
}

// buildOnBase ensures the base image (local profile) and builds the recipe made on it
// unless its tag exists: the images a candidate runs in beside the role images.
func buildOnBase(ctx context.Context, opts EnsureOptions, make func(b *builder, baseRef, baseID string) (recipe, error)) (Result, error) {
	b, err := newBuilder(ctx, ProfileLocal, opts)
	if err != nil {
		return Result{}, err
	}
	defer b.close()
	base, err := b.ensureBase(ctx)
	if err != nil {
		return Result{}, err
	}
	info, ok, err := b.inspect(ctx, base.Ref)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{}, fmt.Errorf("base image %s vanished after it was ensured", base.Ref)
	}
	rec, err := make(b, base.Ref, info.ID)
	if err != nil {
		return Result{}, err
	}
	return b.buildIfMissing(ctx, rec, time.Now())
}
