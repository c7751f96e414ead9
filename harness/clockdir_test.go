package harness

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// Each candidate gets <run dir>/clock/<node>/offset at "0", mounted read-only at the clock
// file's directory instead of a copied file; the nemesis is told the host path; the
// directory goes at the end.
func TestCandidateClockDirectory(t *testing.T) {
	cfg := Config{Store: "redis", CandidateCmd: "/bin/true", FaultTime: 10 * time.Second, StoreRoot: t.TempDir()}
	if err := CheckConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	prep, err := prepare(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{cfg: cfg, prep: prep, log: &journal{dir: t.TempDir(), started: time.Now()}, runID: "r1", resource: testResource, cluster: &clusterLease{store: fakeEndpoints{eps: []string{"redis:6379"}}}}
	r.faults = &faultEnv{log: r.log}
	if r.faults.clock, err = makeClockDir(r.log.dir, []string{"c1", "c2"}); err != nil {
		t.Fatal(err)
	}
	var env nemesis.CandidateClockHostEnv = nemesisEnv{r.faults}
	for _, name := range []string{"c1", "c2"} {
		host := env.CandidateClockHostFile(name)
		if want := filepath.Join(r.log.dir, clockDirName, name, "offset"); host != want {
			t.Errorf("%s: host clock file %s, want %s", name, host, want)
		}
		b, err := os.ReadFile(host)
		if err != nil || string(b) != "0\n" {
			t.Errorf("%s: clock file %q, %v; want 0", name, b, err)
		}
		for path, want := range map[string]fs.FileMode{host: 0o644, filepath.Dir(host): 0o755 | fs.ModeDir} {
			if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
				t.Errorf("%s: mode %v (%v), want %v: a candidate running as any user must read it", path, fi.Mode(), err, want)
			}
		}
		spec, err := r.candidateSpec(name, &external{static: true, hostDir: "/x/" + cmdDirName})
		if err != nil {
			t.Fatal(err)
		}
		clockMounts := slices.DeleteFunc(slices.Clone(spec.Mounts), func(m platform.Mount) bool { return m.Target == externalDir })
		if len(clockMounts) != 1 || clockMounts[0].HostDir != filepath.Dir(host) || clockMounts[0].Target != filepath.Dir(contract.ClockFilePath) {
			t.Errorf("%s: mounts %+v, want %s at %s", name, clockMounts, filepath.Dir(host), filepath.Dir(contract.ClockFilePath))
		}
		for _, f := range spec.Files {
			if f.Path == contract.ClockFilePath {
				t.Errorf("%s: the clock file is also copied into the container; the mount is the only copy", name)
			}
		}
		if spec.Env[contract.EnvClockFile] != contract.ClockFilePath {
			t.Errorf("%s: %s=%q, want %s", name, contract.EnvClockFile, spec.Env[contract.EnvClockFile], contract.ClockFilePath)
		}
	}
	r.faults.removeClockDir()
	if _, err := os.Stat(filepath.Join(r.log.dir, clockDirName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("clock directory still there after removeClockDir: %v", err)
	}
}
