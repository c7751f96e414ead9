package harness

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
)

// externalDir is where a --candidate-cmd executable's host directory is bind-mounted,
// read-only, in every candidate container; externalPath is the executable in it. A mount
// instead of a copy: the container library gzips every file it copies, per container, which
// took 8-25 s of a run's setup for a 14 MB Go binary on the loaded 2-core machine
// (docs/performance.md). Not under /splitbrain, the candidate image's own binary.
const (
	externalDir  = "/splitbrain-cmd"
	externalPath = externalDir + "/splitbrain-candidate"
)

// cmdDirName is the run directory's subdirectory holding the executable while the run's
// candidate containers mount it.
const cmdDirName = "candidate-cmd"

// writeCmdDir writes content as <run dir>/candidate-cmd/splitbrain-candidate (mode 0755, the
// directory 0755: a candidate running as any user must read and run it) and returns the
// directory's absolute path. It returns the path also when it fails half-way, so
// removeCmdDir cleans up.
func writeCmdDir(runDir string, content []byte) (string, error) {
	dir, err := filepath.Abs(filepath.Join(runDir, cmdDirName))
	if err != nil {
		return "", fmt.Errorf("candidate executable directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return dir, fmt.Errorf("candidate executable directory: %w", err)
	}
	f := filepath.Join(dir, path.Base(externalPath))
	if err := os.WriteFile(f, content, 0o755); err != nil {
		return dir, fmt.Errorf("candidate executable: %w", err)
	}
	// The modes above are cut by the umask.
	for p, mode := range map[string]os.FileMode{dir: 0o755, f: 0o755} {
		if err := os.Chmod(p, mode); err != nil {
			return dir, fmt.Errorf("candidate executable: %w", err)
		}
	}
	return dir, nil
}

// removeCmdDir removes the executable's directory once no container mounts it (finish runs
// it after teardown on every exit path); "" is none.
func removeCmdDir(dir string) error {
	if dir == "" {
		return nil
	}
	return os.RemoveAll(dir)
}
