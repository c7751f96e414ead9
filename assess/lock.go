package assess

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrOutDirInUse is wrapped by the error for an out dir another assessment is writing into.
var ErrOutDirInUse = errors.New("out directory in use")

// lockFile in the out dir is held (flock, exclusive) for a whole assessment: two into one
// out dir would run every check twice and overwrite each other's state and scorecard. It
// holds the holder's pid, for the refusal. The file stays: removing it would let a third
// assessment lock a new file while the second still holds the old one.
const lockFile = ".lock"

// lockOutDir takes the out dir's lock or says who holds it; unlock releases it (the kernel
// does too when the process ends, however it ends).
func lockOutDir(outDir string) (unlock func(), err error) {
	path := filepath.Join(outDir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fmt.Errorf("assess: lock %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("assess: lock %s is not a regular file: remove it", path)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("assess: lock %s: %w", path, err)
		}
		holder := "another assessment"
		b, _ := io.ReadAll(io.LimitReader(f, 32))
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			holder = fmt.Sprintf("another assessment (pid %d)", pid)
		}
		return nil, fmt.Errorf("assess: %s is writing into %s (it holds %s): wait for it to end, or give another --out (%w)",
			holder, outDir, path, ErrOutDirInUse)
	}
	// A failed pid write only makes a later refusal less specific.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
