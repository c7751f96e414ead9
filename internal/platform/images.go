package platform

import (
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Image is a local image carrying the project label.
type Image struct {
	ID      string
	Refs    []string // repo:tag references
	Role    string   // LabelRole of the image
	Labels  map[string]string
	Created time.Time
	Size    int64
}

// ProjectImages lists the local images labelled LabelProject=ProjectName (images built by
// internal/images carry it).
func (e *Engine) ProjectImages(ctx context.Context) ([]Image, error) {
	res, err := e.cli.ImageList(ctx, client.ImageListOptions{Filters: client.Filters{}.Add("label", LabelProject+"="+ProjectName)})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]Image, 0, len(res.Items))
	for _, s := range res.Items {
		var refs []string
		for _, r := range s.RepoTags {
			if r != "<none>:<none>" {
				refs = append(refs, r)
			}
		}
		out = append(out, Image{ID: s.ID, Refs: refs, Role: s.Labels[LabelRole], Labels: s.Labels, Created: time.Unix(s.Created, 0), Size: s.Size})
	}
	return out, nil
}

// ImagesInUse returns the IDs of the images that containers (of any project, running or
// not) were created from: such an image must stay.
func (e *Engine) ImagesInUse(ctx context.Context) (map[string]bool, error) {
	cs, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	used := make(map[string]bool, len(cs.Items))
	for _, c := range cs.Items {
		used[c.ImageID] = true
	}
	return used, nil
}

// RemoveImage removes one reference; the image goes with its last reference, together with
// its untagged build layers. It is never forced, so the engine refuses while a container
// uses the image. A reference that is already gone is not an error.
func (e *Engine) RemoveImage(ctx context.Context, ref string) error {
	_, err := e.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w", ref, err)
	}
	return nil
}

// ImageID is the id of the local image ref names (sha256:...): what a tag stands for now.
func (e *Engine) ImageID(ctx context.Context, ref string) (string, error) {
	res, err := e.cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return res.ID, nil
}

// ImagePresent tells whether ref names a local image.
func (e *Engine) ImagePresent(ctx context.Context, ref string) (bool, error) {
	_, err := e.cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("inspect image %s: %w", ref, err)
}
