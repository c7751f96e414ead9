//go:build chaos

package images

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Real engine, real builds: the first call may build everything (minutes), later calls
// must find every tag and build nothing.
func TestEnsureAllRolesThenCached(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	pinCandidateBinary(ctx, t)
	var log bytes.Buffer
	set, first, err := EnsureWith(ctx, ProfileLocal, EnsureOptions{Log: &log}, append([]Role{RoleBase}, Roles...)...)
	if err != nil {
		t.Fatalf("first Ensure: %v\nlog tail:\n%s", err, strings.Join(tailLines(log.String(), 40), "\n"))
	}
	for _, r := range append([]Role{RoleBase}, Roles...) {
		if !strings.HasPrefix(set[r], Namespace) {
			t.Errorf("role %s: ref %q not under %s", r, set[r], Namespace)
		}
	}
	for _, r := range first {
		t.Logf("first:  %-10s %-6s %6.1fs %s %s", r.Role, r.Action, r.Duration.Seconds(), HumanSize(r.Size), r.Ref)
	}

	start := time.Now()
	set2, second, err := EnsureWith(ctx, ProfileLocal, EnsureOptions{}, append([]Role{RoleBase}, Roles...)...)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	for _, r := range second {
		if r.Action != "cached" {
			t.Errorf("second Ensure %s: %s, want cached (nothing rebuilt)", r.Role, r.Action)
		}
		if set2[r.Role] != set[r.Role] {
			t.Errorf("second Ensure %s: ref %s differs from first %s", r.Role, set2[r.Role], set[r.Role])
		}
	}
	t.Logf("second (cached) Ensure of all roles took %.2fs", elapsed.Seconds())

	// Images carry the project label; List agrees with Ensure.
	list, err := List(ctx, ProfileLocal)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, st := range list {
		if !st.Present || st.Ref != set[st.Role] || st.Size <= 0 {
			t.Errorf("List %s: present=%v ref=%s size=%d; Ensure gave %s", st.Role, st.Present, st.Ref, st.Size, set[st.Role])
		}
	}
}

// Each image's main program answers a version command in a short-lived container.
func TestImagesRunTheirBinaries(t *testing.T) {
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "localhost")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	set, err := Ensure(ctx, ProfileLocal, append([]Role{RoleBase}, Roles...)...)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	cases := []struct {
		role       Role
		entrypoint []string
		cmd        []string
		want       string
	}{
		{storekinds.Etcd, nil, []string{"/usr/local/bin/etcd", "--version"}, "etcd Version: " + strings.TrimPrefix(EtcdVersion, "v")},
		{storekinds.Consul, nil, []string{"consul", "version"}, "Consul " + ConsulVersion},
		{storekinds.Redis, nil, []string{"redis-server", "--version"}, "Redis server v=7.0."},
		{storekinds.Postgres, nil, []string{"/usr/lib/postgresql/15/bin/postgres", "--version"}, "(PostgreSQL) 15."},
		{storekinds.ZooKeeper, nil, []string{"version"}, "Apache ZooKeeper, version 3.8."},
		{storekinds.DynamoDB, nil, []string{"node", "-p", "require('dynalite/package.json').version + ' ' + process.version"}, DynaliteVersion + " v18."},
		{RoleTools, nil, []string{"sh", "-c", "iptables --version && ip -V && ps --version"}, "iptables v1."},
		{RoleCandidate, nil, []string{"version"}, "splitbrain"},
		// The base is cleaned: policy-rc.d refuses service starts, no apt lists or .debs.
		{RoleBase, nil, []string{"sh", "-c", "/usr/sbin/policy-rc.d; echo rc=$?; ls /var/lib/apt/lists /var/cache/apt/archives | grep -v -e '^partial$' -e '^lock$' -e ':$' -e '^$' | wc -l"}, "rc=101\n0"},
	}
	labels := map[string]string{LabelProject: ProjectName, "io.splitbrain.run": "images-test-" + time.Now().Format("150405")}
	for _, c := range cases {
		t.Run(string(c.role), func(t *testing.T) {
			opts := []testcontainers.ContainerCustomizer{
				testcontainers.WithCmd(c.cmd...),
				testcontainers.WithLabels(labels),
				testcontainers.WithWaitStrategy(wait.ForExit().WithExitTimeout(2 * time.Minute)),
			}
			if c.entrypoint != nil {
				opts = append(opts, testcontainers.WithEntrypoint(c.entrypoint...))
			}
			ctr, err := testcontainers.Run(ctx, set[c.role], opts...)
			if ctr != nil {
				defer ctr.Terminate(context.WithoutCancel(ctx))
			}
			if err != nil {
				t.Fatalf("run %s: %v", set[c.role], err)
			}
			rc, err := ctr.Logs(ctx)
			if err != nil {
				t.Fatalf("logs: %v", err)
			}
			out, _ := io.ReadAll(rc)
			rc.Close()
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("%v printed %q, want it to contain %q", c.cmd, out, c.want)
			}
			st, err := ctr.State(ctx)
			if err != nil || st.ExitCode != 0 {
				t.Fatalf("exit code %v (%v), want 0", st, err)
			}
		})
	}
}

// pinCandidateBinary builds the splitbrain binary once into the test's temp dir and points
// SPLITBRAIN_BINARY at it: other engineers edit the tree meanwhile, and a changed binary
// would rightly give a new candidate tag between two Ensure calls.
func pinCandidateBinary(ctx context.Context, t *testing.T) {
	t.Helper()
	data, err := buildAndRead(ctx, "go-build-splitbrain", func() (string, error) { return candidateBinary(ctx, io.Discard) })
	if err != nil {
		t.Fatalf("candidate binary: %v", err)
	}
	p := filepath.Join(t.TempDir(), "splitbrain")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvBinary, p)
}

// BenchmarkEnsureCached measures the no-op path every run takes: all tags present.
func BenchmarkEnsureCached(b *testing.B) {
	ctx := context.Background()
	data, err := buildAndRead(ctx, "go-build-splitbrain", func() (string, error) { return candidateBinary(ctx, io.Discard) })
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), "splitbrain")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		b.Fatal(err)
	}
	b.Setenv(EnvBinary, p)
	if _, err := Ensure(ctx, ProfileLocal); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, res, err := EnsureWith(ctx, ProfileLocal, EnsureOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Action != "cached" {
				b.Fatalf("%s was %s during a cached run", r.Role, r.Action)
			}
		}
	}
}

// A new candidate build removes the older candidate image (no container uses it) and keeps
// the new one. The prune is scoped to this test's two salted images: other candidate images
// on the engine belong to other runs.
func TestCandidateBuildPrunesOlderCandidate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pinCandidateBinary(ctx, t)
	eng, err := platform.Connect(ctx)
	if err != nil {
		t.Fatalf("docker engine needed for chaos tests: %v", err)
	}
	defer eng.Close()
	salt := "prune-test-" + platform.NewRunID()
	var refs []string
	t.Cleanup(func() {
		for _, r := range refs {
			if err := eng.RemoveImage(context.Background(), r); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	grace, only := candidatePruneGrace, candidatePruneOnly
	t.Cleanup(func() { candidatePruneGrace, candidatePruneOnly = grace, only })
	candidatePruneGrace = 0
	candidatePruneOnly = func(img platform.Image) bool {
		return img.Role == string(RoleCandidate) && len(refs) > 0 && slices.Contains(img.Refs, refs[0])
	}

	var log bytes.Buffer
	present := func(ref string) bool {
		ok, err := eng.ImagePresent(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, s := range []string{"a", "b", "c"} {
		if s == "c" {
			// The first image is spared while a process uses it (this one, holdImage);
			// once that process is gone (its hold dropped here), the next build prunes it.
			if !present(refs[0]) {
				t.Fatalf("the prune after the second build removed %s, which this process holds\n%s", refs[0], log.String())
			}
			if f, ok := holds.LoadAndDelete(refs[0]); ok {
				f.(*os.File).Close()
			} else {
				t.Fatalf("no hold on %s after it was ensured", refs[0])
			}
		}
		t.Setenv(EnvSalt, salt+"-"+s)
		set, res, err := EnsureWith(ctx, ProfileLocal, EnsureOptions{Log: &log}, RoleCandidate)
		if err != nil {
			t.Fatalf("salt %s: %v\n%s", s, err, log.String())
		}
		if res[0].Action != "built" {
			t.Fatalf("salt %s: %s, want a new build under a new tag", s, res[0].Action)
		}
		refs = append(refs, set[RoleCandidate])
	}
	if refs[0] == refs[1] || refs[1] == refs[2] {
		t.Fatalf("the salts gave tags %v", refs)
	}
	if older, newest := present(refs[0]), present(refs[2]); older || !newest {
		t.Fatalf("after the third build: older %s present=%v (want pruned), newest %s present=%v\n%s", refs[0], older, refs[2], newest, log.String())
	}
	if !strings.Contains(log.String(), "removed old candidate image "+refs[0]) {
		t.Errorf("the prune was not logged:\n%s", log.String())
	}
}
