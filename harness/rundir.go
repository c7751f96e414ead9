package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

// Names of the files in a run directory.
const (
	HistoryFile = runfile.HistoryFile
	ConfigFile  = runfile.ConfigFile
	ResultsFile = runfile.ResultsFile
	LogsDir     = "logs"
	HarnessLog  = "harness.log" // in LogsDir: the run's own log lines, timestamped
	LatestLink  = "latest"
)

// timestampLayout names run directories: sortable, no characters a shell or Windows minds.
const timestampLayout = "20060102T150405.000Z"

// RunDirName is the directory name of a run started at t.
func RunDirName(t time.Time) string { return t.UTC().Format(timestampLayout) }

// CreateRunDir makes <root>/<test>/<timestamp>/ with its logs/ directory and points
// <root>/<test>/latest at it. Two runs started within the same millisecond get "-2", "-3", …
func CreateRunDir(root, test string, now time.Time) (string, error) {
	parent := filepath.Join(root, test)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("run directory: %w (set --out or %s to a writable directory)", err, EnvStoreDir)
	}
	base := RunDirName(now)
	var dir string
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		dir = filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return "", fmt.Errorf("run directory: %w", err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, LogsDir), 0o755); err != nil {
		return "", fmt.Errorf("run directory: %w", err)
	}
	if err := pointLatest(parent, filepath.Base(dir)); err != nil {
		return "", err
	}
	return dir, nil
}

// pointLatest atomically replaces parent/latest with a relative symlink to target; anything
// but a symlink there (a file, a FIFO) is refused, not replaced.
func pointLatest(parent, target string) error {
	if fi, err := os.Lstat(filepath.Join(parent, LatestLink)); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("latest link: %s is not a symlink (%v): splitbrain points it at the newest run; move it away", filepath.Join(parent, LatestLink), fi.Mode().Type())
	}
	tmp := filepath.Join(parent, fmt.Sprintf(".latest-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("latest link: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(parent, LatestLink)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("latest link: %w", err)
	}
	return nil
}

// writeJSON writes v indented to path via a temporary file, so a reader never sees half a file.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return runfile.WriteFile(path, append(b, '\n'), 0o644)
}
