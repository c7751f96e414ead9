package images

import (
	"context"
	"io"
	"time"
)

// Status is what List reports for one role.
type Status struct {
	Role    Role
	Ref     string // the reference Ensure would use; "" when it cannot be known yet
	Present bool
	Size    int64
	Created time.Time
	Note    string // why Ref is unknown, or that the role is built locally in this profile
}

// List reports, per role, the image Ensure would use and whether it is present, without
// building images. Working out the etcd, kubernetes and candidate tags needs their
// binaries, so List may run go build (fast when they are up to date; the first Kubernetes
// build takes minutes).
func List(ctx context.Context, profile Profile) ([]Status, error) {
	if _, err := ParseProfile(string(profile)); err != nil {
		return nil, err
	}
	b, err := newBuilder(ctx, profile, EnsureOptions{Log: io.Discard})
	if err != nil {
		return nil, err
	}
	defer b.close()
	parent := baseRef()
	if profile == ProfileOfficial {
		parent = officialToolsParent
	}
	out := []Status{b.status(ctx, RoleBase, parent, "")}
	for _, role := range Roles {
		if ref := OfficialRef(role); profile == ProfileOfficial && ref != "" {
			out = append(out, b.status(ctx, role, ref, ""))
			continue
		}
		note := ""
		if profile == ProfileOfficial {
			note = "built locally in both profiles"
		}
		rec, err := b.recipeFor(ctx, role, parent)
		if err != nil {
			out = append(out, Status{Role: role, Note: err.Error()})
			continue
		}
		out = append(out, b.status(ctx, role, rec.ref(), note))
	}
	return out, nil
}
