package nemesis

import (
	"fmt"
	"io"
	"os"
)

// MaxSpecFile bounds a --nemesis @FILE: a schedule is a few lines, and an unbounded read of
// /dev/zero once grew to 24 GB and set off the kernel's OOM killer.
const MaxSpecFile = 1 << 20

// readSpecFile reads a regular file of at most MaxSpecFile bytes. Devices, FIFOs and
// directories are refused before reading (a FIFO would block forever).
func readSpecFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v): give a schedule file", path, fi.Mode().Type())
	}
	if fi.Size() > MaxSpecFile {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit for a schedule file", path, fi.Size(), MaxSpecFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Stat and open are two steps: read one byte past the limit to catch a file that grew.
	b, err := io.ReadAll(io.LimitReader(f, MaxSpecFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSpecFile {
		return nil, fmt.Errorf("%s is over the %d-byte limit for a schedule file", path, MaxSpecFile)
	}
	return b, nil
}
