package nemesis

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"unicode/utf8"
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
	// Quoting a binary file's content back in an error would echo whatever it holds
	// (/proc/self/environ carries the environment's secrets).
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return nil, fmt.Errorf("%s is not a text file (a NUL byte at offset %d): give a schedule file", path, i)
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%s is not UTF-8 text: give a schedule file", path)
	}
	return b, nil
}

// shortQuote quotes s for an error message, cut to a readable length.
func shortQuote(s string) string {
	const max = 80
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
