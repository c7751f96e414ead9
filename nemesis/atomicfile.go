package nemesis

import (
	"context"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// noRename remembers containers without a working mv (FROM-scratch images), so a strobe does
// not pay for a failing exec on every flip.
var noRename sync.Map // container id -> true

// writeFileAtomic puts content at path inside nd so that a reader never sees the file missing
// or half-written: Docker's copy removes the old file and writes the new one in place, and
// the clock-offset contract reads an empty or missing file as offset 0. It copies to a
// temporary name and renames it with mv; an image without mv gets the plain copy.
func writeFileAtomic(ctx context.Context, nd *platform.Node, path string, content []byte) error {
	if _, no := noRename.Load(nd.ID()); !no {
		tmp := path + ".splitbrain-tmp"
		if err := nd.CopyFile(ctx, tmp, content, 0o644); err != nil {
			return err
		}
		if code, _, err := nd.Exec(ctx, []string{"mv", "-f", tmp, path}); err == nil && code == 0 {
			return nil
		}
		noRename.Store(nd.ID(), true)
	}
	return nd.CopyFile(ctx, path, content, 0o644)
}
