package images

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/moby/moby/client"
)

const officialToolsParent = "debian:bookworm-slim"

// OfficialRef is the upstream image of a role in the official profile ("" when the role is
// built locally in both profiles).
func OfficialRef(role Role) string { return roleDefs[role].official }

// ensureOfficial pulls missing upstream images (only here, only when missing) and builds
// tools and candidate locally. Untested on the project's machines: they reach no registry.
func (b *builder) ensureOfficial(ctx context.Context, roles []Role) (Set, []Result, error) {
	set := Set{}
	var results []Result
	var errs []error
	for _, role := range roles {
		start := time.Now()
		var res Result
		var err error
		switch role {
		case RoleBase:
			res, err = b.pullIfMissing(ctx, role, officialToolsParent)
		case RoleCandidate:
			res, err = b.ensureRole(ctx, role, "")
		default:
			if ref := OfficialRef(role); ref != "" {
				res, err = b.pullIfMissing(ctx, role, ref)
			} else if _, err = b.pullIfMissing(ctx, RoleBase, officialToolsParent); err == nil {
				// No upstream image (tools, kubernetes): built locally on a Debian parent.
				res, err = b.ensureRole(ctx, role, officialToolsParent)
			}
		}
		if res.Action == "pulled" {
			res.Duration = time.Since(start)
		}
		results = append(results, res)
		if err != nil {
			results[len(results)-1].Action = "failed"
			errs = append(errs, err)
			continue
		}
		set[role] = res.Ref
	}
	return set, results, errors.Join(errs...)
}

// pullIfMissing pulls ref unless the engine already has it.
func (b *builder) pullIfMissing(ctx context.Context, role Role, ref string) (Result, error) {
	res, ok, err := b.cached(ctx, role, ref)
	if err != nil || ok {
		return res, err
	}
	b.logf("images: pulling %s", ref)
	resp, err := b.cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err == nil {
		err = resp.Wait(ctx)
	}
	if err != nil {
		return res, fmt.Errorf("pull %s for %s (official profile): %w; without registry access use --profile local", ref, role, err)
	}
	info, ok, err := b.inspect(ctx, ref)
	if err != nil || !ok {
		return res, fmt.Errorf("pull %s reported success but the image is not present: %v", ref, err)
	}
	res.Action, res.Size = "pulled", info.Size
	return res, nil
}

// Launch is how a role's image is started; the local images follow the official images'
// conventions, so one launcher works for both profiles.
type Launch struct {
	Entrypoint []string          // nil: keep the image's
	Cmd        []string          // the command (server flags are appended by launchers)
	Env        map[string]string // always-needed environment
	User       string            // "" keeps the image's user
	Ports      []string          // container ports the server listens on
	Notes      string
}

// LaunchFor returns the launch contract of a role in a profile (its roleDefs entry).
func LaunchFor(profile Profile, role Role) Launch {
	if d, ok := roleDefs[role]; ok && d.launch != nil {
		return d.launch(profile)
	}
	return Launch{}
}
