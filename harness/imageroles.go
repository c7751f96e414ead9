package harness

import (
	"context"
	"io"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// ImageRoles lists the role images a run of cfg needs, base included (every role image but
// the candidate's is built on it), and the profile they come from. A suite uses it to build
// a row's missing images before the row starts (suite.RunCases).
func ImageRoles(cfg Config) (images.Profile, []images.Role, error) {
	profile, err := images.DefaultProfile()
	if cfg.Profile != "" {
		profile, err = images.ParseProfile(cfg.Profile)
	}
	if err != nil {
		return "", nil, err
	}
	roles := []images.Role{images.RoleBase, images.RoleTools, images.RoleCandidate}
	if !cfg.storeless() {
		kind, err := stores.ParseKind(cfg.Store)
		if err != nil {
			return "", nil, err
		}
		roles = append(roles, stores.ImageRoles(kind)...)
	}
	return profile, roles, nil
}

// EnsureImages makes the roles' images present, as a run leasing from this pool would, so
// that the runs after it find them ensured.
func (p *StorePool) EnsureImages(ctx context.Context, profile images.Profile, log io.Writer, roles ...images.Role) error {
	_, _, err := p.ensureImages(ctx, profile, log, roles...)
	return err
}

// EnsureImagesInBackground is EnsureImages at the lowest CPU weight
// (images.EnsureOptions.Background), for builds that run beside runs.
func (p *StorePool) EnsureImagesInBackground(ctx context.Context, profile images.Profile, log io.Writer, roles ...images.Role) error {
	_, _, err := p.ensureImagesWith(ctx, profile, images.EnsureOptions{Log: log, Background: true}, roles...)
	return err
}
