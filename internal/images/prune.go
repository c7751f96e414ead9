package images

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// candidatePruneGrace spares recently built candidate images from the prune after a build:
// another splitbrain process (another checkout, another binary) may have just built its own
// and not yet started its containers.
var candidatePruneGrace = 15 * time.Minute

// candidatePruneOnly, when set, limits that prune to the images it accepts (tests use it to
// touch only the images they built).
var candidatePruneOnly func(platform.Image) bool

// pruneSelect picks the references to remove from imgs: every image no container uses and
// keep does not hold (an untagged image by its ID).
func pruneSelect(imgs []platform.Image, inUse map[string]bool, keep func(platform.Image) bool) []string {
	var out []string
	for _, img := range imgs {
		if inUse[img.ID] || keep(img) {
			continue
		}
		if len(img.Refs) == 0 {
			out = append(out, img.ID)
			continue
		}
		out = append(out, img.Refs...)
	}
	return out
}

// removeProjectImages removes what pruneSelect picks. It goes on past failures (another
// process may have started a container from an image meanwhile: the engine then refuses)
// and returns what it removed and the failures joined.
func removeProjectImages(ctx context.Context, keep func(platform.Image) bool) ([]string, error) {
	eng, err := platform.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	imgs, err := eng.ProjectImages(ctx)
	if err != nil {
		return nil, err
	}
	inUse, err := eng.ImagesInUse(ctx)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, ref := range pruneSelect(imgs, inUse, keep) {
		release, ok := claimForRemoval(ref)
		if !ok {
			continue // a splitbrain process still uses it (holdImage)
		}
		err := eng.RemoveImage(ctx, ref)
		release()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, ref)
	}
	return removed, errors.Join(errs...)
}

// keepCandidate is the prune rule after current was built: only candidate images built
// before current, outside the grace period, are removed.
func keepCandidate(current string, currentBuilt, now time.Time, grace time.Duration, only func(platform.Image) bool) func(platform.Image) bool {
	return func(img platform.Image) bool {
		return img.Role != string(RoleCandidate) || slices.Contains(img.Refs, current) ||
			!img.Created.Before(currentBuilt) || now.Sub(img.Created) < grace ||
			(only != nil && !only(img))
	}
}

// PruneResult says what Prune did.
type PruneResult struct {
	Kept    []string // the current set's references
	Removed []string
}

// Prune removes every project image except the current set of profile (the references
// Ensure would use now, as List reports them) and images a container uses. A role whose
// current reference cannot be worked out keeps all its images.
func Prune(ctx context.Context, profile Profile) (PruneResult, error) {
	var res PruneResult
	sts, err := List(ctx, profile)
	if err != nil {
		return res, err
	}
	current := map[string]bool{}
	unknownRole := map[string]bool{}
	for _, st := range sts {
		if st.Ref == "" {
			unknownRole[string(st.Role)] = true
			continue
		}
		current[st.Ref] = true
		res.Kept = append(res.Kept, st.Ref)
	}
	res.Removed, err = removeProjectImages(ctx, keepCurrent(current, unknownRole))
	if err != nil {
		return res, fmt.Errorf("remove images: %w", err)
	}
	return res, nil
}

// keepCurrent holds the images of the current set and of roles with an unknown current image.
func keepCurrent(current, unknownRole map[string]bool) func(platform.Image) bool {
	return func(img platform.Image) bool {
		if unknownRole[img.Role] {
			return true
		}
		for _, r := range img.Refs {
			if current[r] {
				return true
			}
		}
		return false
	}
}

// RequireCandidateImage checks that a user's --candidate-image is present: nothing is ever
// pulled here, so a missing image would otherwise end the run with the engine's raw error.
func RequireCandidateImage(ctx context.Context, eng *platform.Engine, ref string) error {
	ok, err := eng.ImagePresent(ctx, ref)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("candidate image %s is not present on this Docker engine (no registry can be reached here): build or load it first, e.g. docker build -t %s .", ref, ref)
	}
	return nil
}
