package rootfs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Apt source files the mirror is read from, deb822 first (Debian 12's default).
const (
	debianSources = "/etc/apt/sources.list.d/debian.sources"
	legacySources = "/etc/apt/sources.list"
)

// errNoMirror means a sources file named no usable Debian mirror.
var errNoMirror = errors.New("no mirror found")

// MirrorFromDeb822 returns the first URI of the first "URIs:" field of a deb822 sources
// file. Comment lines never count, so a commented snapshot URL above the real one is skipped.
func MirrorFromDeb822(text string) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(key), "URIs") {
			continue
		}
		if f := strings.Fields(val); len(f) > 0 {
			return f[0], nil
		}
	}
	return "", errNoMirror
}

// MirrorFromSourcesList returns the URI of the first "deb" line of a one-line-style
// sources.list, skipping options in brackets ("deb [arch=amd64] URI suite ...").
func MirrorFromSourcesList(text string) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "deb" {
			continue
		}
		rest := f[1:]
		if strings.HasPrefix(rest[0], "[") {
			for len(rest) > 0 && !strings.HasSuffix(rest[0], "]") {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				rest = rest[1:]
			}
		}
		if len(rest) > 0 {
			return rest[0], nil
		}
	}
	return "", errNoMirror
}

// EnvMirror overrides the mirror read from apt sources: needed on non-Debian hosts (an Ubuntu
// CI runner's sources name an Ubuntu mirror, which has no bookworm).
const EnvMirror = "SPLITBRAIN_DEBIAN_MIRROR"

// FindMirror returns the Debian mirror debootstrap should use: $SPLITBRAIN_DEBIAN_MIRROR, else
// the host's apt sources.
func FindMirror() (string, error) {
	if m := strings.TrimSpace(os.Getenv(EnvMirror)); m != "" {
		return m, nil
	}
	return findMirror(debianSources, legacySources)
}

func findMirror(deb822Path, listPath string) (string, error) {
	if b, err := os.ReadFile(deb822Path); err == nil {
		if m, err := MirrorFromDeb822(string(b)); err == nil {
			return m, nil
		}
	}
	if b, err := os.ReadFile(listPath); err == nil {
		if m, err := MirrorFromSourcesList(string(b)); err == nil {
			return m, nil
		}
	}
	return "", fmt.Errorf("no Debian mirror configured: neither %s (a \"URIs:\" line) nor %s (a \"deb URI suite\" line) names one; add a \"URIs: http://<your Debian mirror>/debian\" line to %s",
		deb822Path, listPath, deb822Path)
}
