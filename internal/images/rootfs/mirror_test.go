package rootfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMirrorFromDeb822(t *testing.T) {
	cases := []struct {
		name, text, want string
		wantErr          bool
	}{
		{name: "debian 12 default with commented snapshot above", text: `Types: deb
# http://snapshot.mirror.example/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
`, want: "http://mirror.example/debian"},
		{name: "commented URIs line is skipped", text: "# URIs: http://old.example/debian\nTypes: deb\nURIs: http://mirror.example/debian http://second.example/debian\n", want: "http://mirror.example/debian"},
		{name: "first stanza wins", text: "Types: deb\nURIs: http://a.example/debian\n\nTypes: deb\nURIs: http://b.example/debian\n", want: "http://a.example/debian"},
		{name: "key case and spacing", text: "  uris :   http://c.example/debian  \n", want: "http://c.example/debian"},
		{name: "empty URIs value then real one", text: "URIs:\nURIs: http://d.example/debian\n", want: "http://d.example/debian"},
		{name: "no URIs", text: "Types: deb\nSuites: bookworm\n# URIs: http://x\n", wantErr: true},
		{name: "empty", text: "", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := MirrorFromDeb822(c.text)
			if c.wantErr {
				if err == nil {
					t.Fatalf("want error, got %q", got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestMirrorFromSourcesList(t *testing.T) {
	cases := []struct{ text, want string }{
		{"deb http://mirror.example/debian bookworm main\n", "http://mirror.example/debian"},
		{"# deb http://commented.example/debian bookworm main\ndeb-src http://src.example/debian bookworm main\ndeb http://real.example/debian bookworm main\n", "http://real.example/debian"},
		{"deb [arch=amd64 signed-by=/k.gpg] http://opt.example/debian bookworm main\n", "http://opt.example/debian"},
		{"deb [trusted=yes] http://one.example/debian bookworm main\n", "http://one.example/debian"},
	}
	for _, c := range cases {
		got, err := MirrorFromSourcesList(c.text)
		if err != nil || got != c.want {
			t.Errorf("MirrorFromSourcesList(%q) = %q, %v; want %q", c.text, got, err, c.want)
		}
	}
	if got, err := MirrorFromSourcesList("# nothing\ndeb-src http://x bookworm main\n"); err == nil {
		t.Errorf("want error without deb lines, got %q", got)
	}
}

func TestFindMirrorFallbackAndError(t *testing.T) {
	dir := t.TempDir()
	deb822 := filepath.Join(dir, "debian.sources")
	list := filepath.Join(dir, "sources.list")
	if _, err := findMirror(deb822, list); err == nil || !strings.Contains(err.Error(), "URIs:") {
		t.Fatalf("no files: want an error explaining what to add, got %v", err)
	}
	os.WriteFile(list, []byte("deb http://fallback.example/debian bookworm main\n"), 0o644)
	os.WriteFile(deb822, []byte("# URIs: http://commented.example\nTypes: deb\n"), 0o644)
	if got, err := findMirror(deb822, list); err != nil || got != "http://fallback.example/debian" {
		t.Fatalf("deb822 without URIs: want fallback, got %q, %v", got, err)
	}
	os.WriteFile(deb822, []byte("URIs: http://primary.example/debian\n"), 0o644)
	if got, err := findMirror(deb822, list); err != nil || got != "http://primary.example/debian" {
		t.Fatalf("want deb822 mirror, got %q, %v", got, err)
	}
}
