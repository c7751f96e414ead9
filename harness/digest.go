package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"syscall"
)

// maxDigestBytes bounds the executable CandidateDigest reads (the Go example is 14 MB; a
// sparse 20 GB file named by mistake must not take minutes).
const maxDigestBytes = 1 << 30

// CandidateDigest is "sha256:<hex>" of what a --candidate-cmd path runs: the executable's
// bytes, or for a candidate directory every file's relative name, mode and bytes, read under
// readCandidateDir's rules. A resumed assessment compares it with the digest its saved
// results were made with: the same path may hold a rebuilt candidate.
func CandidateDigest(path string) (string, error) {
	h := sha256.New()
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		files, err := readCandidateDir(path)
		if err != nil {
			return "", err
		}
		for _, f := range files {
			fmt.Fprintf(h, "%s\x00%o\x00%d\x00", f.name, uint32(f.mode), len(f.data))
			h.Write(f.data)
		}
		return digestText(h), nil
	}
	// O_NONBLOCK: a FIFO given as the candidate must not hang the reader.
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%s): give the path of an executable", path, fi.Mode().Type())
	}
	if fi.Size() > maxDigestBytes {
		return "", fmt.Errorf("%s holds %d MB, more than the %d MB a candidate executable may: give the candidate's own executable", path, fi.Size()>>20, maxDigestBytes>>20)
	}
	if n, err := io.Copy(h, io.LimitReader(f, maxDigestBytes+1)); err != nil {
		return "", err
	} else if n > maxDigestBytes {
		return "", fmt.Errorf("%s grew past %d MB while it was read", path, maxDigestBytes>>20)
	}
	return digestText(h), nil
}

func digestText(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }
