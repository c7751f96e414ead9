package harness

import (
	"fmt"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
	"os"
	"path"
	"path/filepath"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
)

// candidateClockFile is where the clock-offset control goes in candidate containers; the
// path is also passed in SPLITBRAIN_CLOCK_OFFSET_FILE. It must not lie under /splitbrain/,
// which is the candidate image's binary (a unit test checks).
const candidateClockFile = contract.ClockFilePath

// candidateFaketimeFile is the libfaketime timestamp file beside the clock file: a library
// candidate's process reads it through LD_PRELOAD (libraries.FaketimeEnv).
const candidateFaketimeFile = "/splitbrain-clock/faketime"

// clockDirName is the run directory's subdirectory with the candidates' clock files, while
// the run's containers exist.
const clockDirName = "clock"

// clockDir is the host directory with one directory per candidate holding its clock file,
// bind-mounted read-only at the clock file's directory in the candidate's container, so the
// nemesis changes a clock with a rename on the host instead of a Docker copy and exec per
// candidate (docs/performance.md). "" = none made.
type clockDir string

// makeClockDir creates <run dir>/clock/<candidate>/ with the clock file at offset 0 for every
// candidate. It returns the directory also when it fails half-way, so remove cleans up.
func makeClockDir(runDir string, names []string) (clockDir, error) {
	abs, err := filepath.Abs(filepath.Join(runDir, clockDirName))
	if err != nil {
		return "", fmt.Errorf("candidate clock directory: %w", err)
	}
	dir := clockDir(abs)
	for _, name := range names {
		d := filepath.Join(abs, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return dir, fmt.Errorf("candidate clock directory: %w", err)
		}
		// MkdirAll's mode is cut by the umask; a candidate running as any user must read it.
		for _, p := range []string{abs, d} {
			if err := os.Chmod(p, 0o755); err != nil {
				return dir, fmt.Errorf("candidate clock directory: %w", err)
			}
		}
		for file, content := range map[string]string{candidateClockFile: "0\n", candidateFaketimeFile: nemesis.FaketimeOffset(0)} {
			f := filepath.Join(d, path.Base(file))
			if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
				return dir, fmt.Errorf("candidate clock file: %w", err)
			}
			if err := os.Chmod(f, 0o644); err != nil {
				return dir, fmt.Errorf("candidate clock file: %w", err)
			}
		}
	}
	return dir, nil
}

// hostDir is candidate's directory, "" when there is no clock directory.
func (d clockDir) hostDir(candidate string) string {
	if d == "" {
		return ""
	}
	return filepath.Join(string(d), candidate)
}

// hostFile is the host path of candidate's clock file (nemesis.CandidateClockHostEnv).
func (d clockDir) hostFile(candidate string) string {
	if d == "" {
		return ""
	}
	return filepath.Join(d.hostDir(candidate), path.Base(candidateClockFile))
}

// faketimeFile is the host path of candidate's libfaketime file (library candidates).
func (d clockDir) faketimeFile(candidate string) string {
	if d == "" {
		return ""
	}
	return filepath.Join(d.hostDir(candidate), path.Base(candidateFaketimeFile))
}

// remove removes the directory (finish runs it after teardown on every exit path).
func (d clockDir) remove() error {
	if d == "" {
		return nil
	}
	return os.RemoveAll(string(d))
}
