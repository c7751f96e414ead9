package nemesis

import (
	"context"
	"sync"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
)

// renamers are the ways to rename a file inside a container, tried in order: mv for images
// with a shell toolset (the candidate-packages and user images), the splitbrain binary's own
// rename command for the FROM-scratch candidate image, which has no mv.
var renamers = [][]string{
	{"mv", "-f"},
	{images.CandidateBinary, "rename"},
}

// renamerOf remembers per container which renamer worked (its index), or -1 when none did,
// so a strobe does not pay for failing execs on every flip.
var renamerOf sync.Map // container id -> int

// writeFileAtomic puts content at path inside nd so that a reader never sees the file missing
// or half-written: Docker's copy removes the old file and writes the new one in place, and
// the clock-offset contract reads an empty or missing file as offset 0. It copies to a
// temporary name and renames it; only a container where no renamer works gets the plain copy.
func writeFileAtomic(ctx context.Context, nd Node, path string, content []byte) error {
	first, last := 0, len(renamers)-1
	if i, known := renamerOf.Load(nd.ID()); known {
		if i.(int) < 0 {
			return nd.CopyFile(ctx, path, content, 0o644)
		}
		first, last = i.(int), i.(int)
	}
	tmp := path + ".splitbrain-tmp"
	if err := nd.CopyFile(ctx, tmp, content, 0o644); err != nil {
		return err
	}
	for i := first; i <= last; i++ {
		cmd := append(append([]string(nil), renamers[i]...), tmp, path)
		if code, _, err := nd.Exec(ctx, cmd); err == nil && code == 0 {
			renamerOf.Store(nd.ID(), i)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if first == 0 {
		renamerOf.Store(nd.ID(), -1)
	}
	return nd.CopyFile(ctx, path, content, 0o644)
}

// writeHostFileAtomic replaces the host file path (in a directory bind-mounted into a
// container) by a temporary file in the same directory renamed over it: a reader in the
// container sees the old content or the new, never a missing or partial file. The directory,
// not the file, is what is mounted: a single-file bind mount keeps the old inode and would
// never see the rename.
func writeHostFileAtomic(path string, content []byte) error {
	return runfile.WriteFile(path, content, 0o644) // readable by a candidate running as any user
}
