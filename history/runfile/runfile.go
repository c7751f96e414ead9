// Package runfile is the one way splitbrain reads files of a run directory (config.json,
// results.json, history.jsonl, a shard's junit.xml): a run directory may come from someone
// else (a shared store, a merged shard, a directory given to replay) and must not make a
// reader hang, exhaust memory or read outside it. A file is read only when it is a regular
// file, reached without a symlink that leaves its directory, opened without blocking (a FIFO
// is refused, not waited on), and no larger than the caller's limit.
//
// It also holds the same rules for the other files splitbrain touches on a user's word:
// OpenInput and ReadInput read a file named on the command line (a candidate executable, an
// explore corpus, an assessment's state), and WriteFile replaces an output file whole without
// ever renaming over something that is not a regular file.
package runfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Names of the files of a run directory: their one home (the harness writes them, the
// checkers, reports and replay read them; those packages' own names are these).
const (
	HistoryFile = "history.jsonl"
	ConfigFile  = "config.json"
	ResultsFile = "results.json"
)

// Limits for the files of a run directory.
const (
	MaxJSON    = 64 << 20 // config.json, results.json, junit.xml: lists in them are capped
	MaxHistory = 16 << 30 // history.jsonl: read as a stream, never whole
)

// ErrNotRegular is wrapped by the error for a FIFO, device, socket or directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrOutside is wrapped by the error for a symlink that leads out of the file's directory.
var ErrOutside = errors.New("symlink leads out of the run directory")

// ErrTooLarge is wrapped by the error for a file above its limit.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading under the rules above; the returned reader fails once more
// than limit bytes come (a file that grows past it). A missing file gives an error that
// satisfies errors.Is(err, os.ErrNotExist).
func Open(path string, limit int64) (io.ReadCloser, error) {
	real, err := contained(path)
	if err != nil {
		return nil, err
	}
	r, err := openRegular(path, real, syscall.O_NOFOLLOW, limit, "a run directory holds only regular files; remove it")
	if err != nil {
		return nil, err // not r: a nil *limited would make a non-nil io.ReadCloser
	}
	return r, nil
}

// OpenInput opens a file the user named (not one of a run directory) for reading: a symlink
// is followed wherever it leads, since the user chose the path, but the file it reaches must
// be a regular file of at most limit bytes, opened without blocking. A missing file gives an
// error that satisfies errors.Is(err, os.ErrNotExist).
func OpenInput(path string, limit int64) (*os.File, error) {
	r, err := openRegular(path, path, 0, limit, "give the path of a regular file")
	if err != nil {
		return nil, err
	}
	return r.f, nil
}

// StatInput checks a file the user named under the rules of OpenInput without reading it,
// and returns what its open descriptor says of it (the file itself, past any symlink).
func StatInput(path string, limit int64) (os.FileInfo, error) {
	f, err := OpenInput(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// ReadInput reads a file the user named whole, under the rules of OpenInput.
func ReadInput(path string, limit int64) ([]byte, error) {
	f, err := OpenInput(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &limited{f: f, left: limit, path: path, limit: limit}
	return io.ReadAll(r)
}

// openRegular opens real (path as the user wrote it names it in errors) and keeps it only
// when it is a regular file within limit; hint says how to fix a refused one.
func openRegular(path, real string, flags int, limit int64, hint string) (*limited, error) {
	// Stat first: a device is refused without being opened (opening some has effects).
	if st, err := os.Stat(real); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s): %s", path, ErrNotRegular, kind(st.Mode()), hint)
	}
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever, and
	// the file may have been swapped for one since the Stat.
	fd, err := syscall.Open(real, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|flags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w (%s): %s", path, ErrNotRegular, kind(st.Mode()), hint)
	}
	if st.Size() > limit {
		f.Close()
		return nil, fmt.Errorf("%s: %w: %d bytes, more than the %d this reader takes", path, ErrTooLarge, st.Size(), limit)
	}
	return &limited{f: f, left: limit, path: path, limit: limit}, nil
}

// ReadFile reads path whole under the rules of Open.
func ReadFile(path string, limit int64) ([]byte, error) {
	r, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// contained resolves path's last element when it is a symlink and refuses a target outside
// path's directory (a symlink within it, e.g. to a sibling file, is fine).
func contained(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		return path, nil
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(dir, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: %w (to %s)", path, ErrOutside, target)
	}
	return target, nil
}

func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

type limited struct {
	f           *os.File
	left, limit int64
	path        string
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a file that grew past the limit from one that ends at it.
		var one [1]byte
		if n, _ := l.f.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%s: %w: more than the %d bytes this reader takes", l.path, ErrTooLarge, l.limit)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.f.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limited) Close() error { return l.f.Close() }
