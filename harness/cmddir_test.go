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
	"syscall"
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
	r := &run{cfg: cfg, prep: prep, log: &journal{dir: t.TempDir(), started: time.Now()}, runID: "r1", resource: testResource,
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

// A candidate directory is read as files and directories only: a FIFO (a read would block)
// or a symlink (it could lead out of the tree) is refused by name before any read.
func TestReadCandidateDir(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "node_modules", "x"), 0o755)
	os.WriteFile(filepath.Join(dir, candidateDirEntry), []byte("#!/bin/sh\n"), 0o700)
	os.WriteFile(filepath.Join(dir, "node_modules", "x", "index.js"), []byte("//"), 0o600)
	files, err := readCandidateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]os.FileMode{}
	for _, f := range files {
		modes[f.name] = f.mode
	}
	if modes[candidateDirEntry] != 0o755 || modes[filepath.Join("node_modules", "x", "index.js")] != 0o644 || !modes["node_modules"].IsDir() {
		t.Errorf("modes %v: want the launcher 0755, other files 0644 (any user reads them), directories kept", modes)
	}
	out := t.TempDir()
	got, err := writeCandidateDir(out, files)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(got, "node_modules", "x", "index.js")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("written tree: %v %v", fi, err)
	}
	if err := checkExecutable(dir); err != nil {
		t.Errorf("a directory with an executable %s: %v", candidateDirEntry, err)
	}
	if err := checkExecutable(filepath.Join(dir, "node_modules")); err == nil || !strings.Contains(err.Error(), "without an executable file") {
		t.Errorf("a directory without %s: %v", candidateDirEntry, err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readCandidateDir(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO in the directory: %v", err)
	}
	os.Remove(filepath.Join(dir, "pipe"))
	os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	if _, err := readCandidateDir(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a symlink in the directory: %v", err)
	}
}

func TestCandidateVariantFlags(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Store: "redis", Recipe: "redis-setnx", CandidateArgs: []string{"x"}}, "need --candidate-cmd or --candidate-image"},
		{Config{Store: "redis", CandidateImage: "img", CandidateEnv: []string{"NOEQUALS"}}, "want NAME=VALUE"},
		{Config{Store: "redis", CandidateImage: "img", CandidateEnv: []string{"SPLITBRAIN_NODE_ID=c9"}}, "are the harness's"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
	ok := Config{Store: "redis", FaultTime: time.Second, CandidateImage: "img", CandidateArgs: []string{"--variant", "b"}, CandidateEnv: []string{"VARIANT=b=c"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("a valid variant refused: %v", err)
	}
}
