package harness

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// A --candidate-cmd executable is written once per run to <run dir>/candidate-cmd/ and that
// directory is mounted (read-only: platform mounts are) into every candidate container as
// its entrypoint's directory, instead of a copy per container; the directory goes at the end.
func TestCandidateCmdMountedNotCopied(t *testing.T) {
	cfg := Config{Store: "redis", CandidateCmd: "/bin/true", FaultTime: 10 * time.Second, StoreRoot: t.TempDir()}
	if err := CheckConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	prep, err := prepare(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{cfg: cfg, prep: prep, log: &journal{dir: t.TempDir(), started: time.Now()}, runID: "r1",
		cluster: &clusterLease{store: fakeEndpoints{eps: []string{"redis:6379"}}},
		imgs:    images.Set{images.RoleCandidate: "cand:1", images.RoleBase: "base:1"}}
	r.faults = &faultEnv{log: r.log}

	if _, err := r.candidateSpec("c1", &external{content: []byte("x"), static: true}); err == nil {
		t.Error("a spec for an executable not written to the run directory was made: its entrypoint would not exist")
	}

	content := bytes.Repeat([]byte("#!/bin/sh\nexec sleep 1\n"), 3)
	dir, err := writeCmdDir(r.log.dir, content)
	if err != nil {
		t.Fatal(err)
	}
	r.cmdDir = dir
	if want := filepath.Join(r.log.dir, cmdDirName); dir != want {
		t.Errorf("executable directory %s, want %s", dir, want)
	}
	file := filepath.Join(dir, path.Base(externalPath))
	if b, err := os.ReadFile(file); err != nil || !bytes.Equal(b, content) {
		t.Errorf("executable %s: %q, %v; want the --candidate-cmd bytes", file, b, err)
	}
	for p, want := range map[string]fs.FileMode{file: 0o755, dir: 0o755 | fs.ModeDir} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v: a candidate running as any user must run it", p, fi.Mode(), err, want)
		}
	}
	if path.Dir(externalPath) != externalDir || strings.HasPrefix(externalDir+"/", "/splitbrain/") {
		t.Errorf("entrypoint %s must lie directly in the mounted %s, which must not shadow the image's /splitbrain", externalPath, externalDir)
	}

	for _, tc := range []struct {
		ext   external
		image string
	}{
		{external{content: content, static: true, hostDir: dir}, "cand:1"},
		{external{content: content, hostDir: dir}, "base:1"},
		{external{content: content, hostDir: dir, image: "pkgs:1"}, "pkgs:1"},
	} {
		for _, name := range []string{"c1", "c2", "c3"} {
			spec, err := r.candidateSpec(name, &tc.ext)
			if err != nil {
				t.Fatal(err)
			}
			if spec.Image != tc.image {
				t.Errorf("%s (static %v, image %q): image %s, want %s", name, tc.ext.static, tc.ext.image, spec.Image, tc.image)
			}
			if !slices.Equal(spec.Entrypoint, []string{externalPath}) {
				t.Errorf("%s: entrypoint %v, want %s", name, spec.Entrypoint, externalPath)
			}
			if !slices.Contains(spec.Mounts, platform.Mount{HostDir: dir, Target: externalDir}) {
				t.Errorf("%s: mounts %+v lack %s at %s", name, spec.Mounts, dir, externalDir)
			}
			for _, f := range spec.Files {
				if strings.HasPrefix(f.Path, externalDir) || len(f.Content) >= len(content) {
					t.Errorf("%s: %s (%d bytes) is still copied into the container; the mount is the only delivery", name, f.Path, len(f.Content))
				}
			}
			if err := spec.Validate(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}

	if err := removeCmdDir(r.cmdDir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("executable directory still there after removeCmdDir: %v", err)
	}
}
