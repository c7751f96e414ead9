package harness

import (
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
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

// candidateDirEntry is the executable a candidate directory runs (--candidate-cmd DIR).
const candidateDirEntry = "candidate"

// maxCandidateDirBytes bounds what a candidate directory may hold (a JVM's jars and a Node
// program's node_modules fit; a mistaken home directory does not).
const maxCandidateDirBytes = 512 << 20

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

// dirFile is one file of a candidate directory, by its path relative to it.
type dirFile struct {
	name string
	mode os.FileMode
	data []byte
}

// readCandidateDir reads a candidate directory: directories and regular files only (a
// symlink, FIFO or device is refused by name, so no read can block or leave the tree), at
// most maxCandidateDirBytes in all, sizes taken from Lstat before any read.
func readCandidateDir(root string) ([]dirFile, error) {
	var out []dirFile
	var total int64
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if rel != "." {
				out = append(out, dirFile{name: rel, mode: os.ModeDir | 0o755})
			}
			return nil
		case !info.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file (%s): a candidate directory holds files and directories only", p, info.Mode().Type())
		}
		if total += info.Size(); total > maxCandidateDirBytes {
			return fmt.Errorf("%s holds more than %d MB: give the directory of the candidate only", root, maxCandidateDirBytes>>20)
		}
		// No more than the size counted above, and without blocking: the file may have been
		// swapped for a FIFO or grown since the walk looked at it.
		data, err := runfile.ReadInput(p, info.Size())
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if info.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
		out = append(out, dirFile{name: rel, mode: mode, data: data})
		return nil
	})
	return out, err
}

// writeCandidateDir writes a candidate directory's files under <run dir>/candidate-cmd (the
// directory mounted at externalDir), readable by any user, and returns its absolute path.
func writeCandidateDir(runDir string, files []dirFile) (string, error) {
	dir, err := filepath.Abs(filepath.Join(runDir, cmdDirName))
	if err != nil {
		return "", fmt.Errorf("candidate directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return dir, fmt.Errorf("candidate directory: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return dir, fmt.Errorf("candidate directory: %w", err)
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if f.mode.IsDir() {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return dir, fmt.Errorf("candidate directory: %w", err)
			}
		} else if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return dir, fmt.Errorf("candidate directory: %w", err)
		}
		if err := os.Chmod(p, f.mode.Perm()); err != nil { // cut by the umask otherwise
			return dir, fmt.Errorf("candidate directory: %w", err)
		}
	}
	return dir, nil
}
