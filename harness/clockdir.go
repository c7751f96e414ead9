package harness

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
)

// clockDirName is the run directory's subdirectory with the candidates' clock files, while
// the run's containers exist.
const clockDirName = "clock"

// makeClockDir creates <run dir>/clock/<candidate>/ with the clock file at offset 0 for every
// candidate. Each directory is bind-mounted read-only at the clock file's directory in its
// candidate's container, so the nemesis changes a clock with a rename on the host instead of
// a Docker copy and exec per candidate (docs/performance.md).
func (r *run) makeClockDir(names []string) error {
	dir, err := filepath.Abs(filepath.Join(r.log.dir, clockDirName))
	if err != nil {
		return fmt.Errorf("candidate clock directory: %w", err)
	}
	r.clockDir = dir // set first: removeClockDir cleans up a half-made one
	for _, name := range names {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("candidate clock directory: %w", err)
		}
		// MkdirAll's mode is cut by the umask; a candidate running as any user must read it.
		for _, p := range []string{dir, d} {
			if err := os.Chmod(p, 0o755); err != nil {
				return fmt.Errorf("candidate clock directory: %w", err)
			}
		}
		f := filepath.Join(d, path.Base(candidateClockFile))
		if err := os.WriteFile(f, []byte("0\n"), 0o644); err != nil {
			return fmt.Errorf("candidate clock file: %w", err)
		}
		if err := os.Chmod(f, 0o644); err != nil {
			return fmt.Errorf("candidate clock file: %w", err)
		}
	}
	return nil
}

func (r *run) candidateClockHostDir(name string) string { return filepath.Join(r.clockDir, name) }

// removeClockDir removes the clock directories once no container mounts them (finish runs it
// after teardown on every exit path).
func (r *run) removeClockDir() {
	if r.clockDir == "" {
		return
	}
	if err := os.RemoveAll(r.clockDir); err != nil {
		r.log.logf("remove candidate clock directory: %v", err)
	}
}

// CandidateClockHostFile is the host path of a candidate's clock file (nemesis.CandidateClockHostEnv).
func (n nemesisEnv) CandidateClockHostFile(candidate string) string {
	if n.r.clockDir == "" {
		return ""
	}
	return filepath.Join(n.r.candidateClockHostDir(candidate), path.Base(candidateClockFile))
}
