package runfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data whole: it writes a new temporary file (a unique name
// in path's directory, so two writers never share one) and renames it over path, so a
// reader never sees half a file and a crash leaves the old one. The file gets mode perm.
//
// A path that exists and is not a regular file is refused before anything is written
// (CheckReplaceable): the rename would not write into a device, FIFO or symlink but replace
// it, so --combine-junit /dev/null, run as root, would turn the host's /dev/null into a
// regular file.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	if err := CheckReplaceable(path); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm) // CreateTemp makes it 0600
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// CheckReplaceable returns nil when path does not exist or is a regular file, and otherwise
// an error wrapping ErrNotRegular that names what is there: a writer that renames over path
// calls it first. A symlink is refused too, not followed: the user may not know where it
// leads, and renaming over it would replace the link, not write where it points.
func CheckReplaceable(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if fi.Mode().IsRegular() {
		return nil
	}
	what := kind(fi.Mode())
	if fi.Mode()&os.ModeSymlink != 0 {
		what = "a symlink"
	}
	return fmt.Errorf("%s: %w (%s): splitbrain replaces its output files whole and would replace it, not write into it; give the path of a regular file or of a new one", path, ErrNotRegular, what)
}
