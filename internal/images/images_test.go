package images

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

func TestParseProfile(t *testing.T) {
	for _, s := range []string{"local", "official"} {
		if p, err := ParseProfile(s); err != nil || string(p) != s {
			t.Errorf("ParseProfile(%q) = %q, %v", s, p, err)
		}
	}
	for _, s := range []string{"", "Local", "dockerhub", " local"} {
		_, err := ParseProfile(s)
		if err == nil || !strings.Contains(err.Error(), `"local"`) || !strings.Contains(err.Error(), `"official"`) {
			t.Errorf("ParseProfile(%q): want an error naming the valid profiles, got %v", s, err)
		}
	}
}

func TestDefaultProfile(t *testing.T) {
	t.Setenv(EnvProfile, "")
	if p, err := DefaultProfile(); err != nil || p != ProfileLocal {
		t.Fatalf("unset: got %q, %v; want local", p, err)
	}
	t.Setenv(EnvProfile, "official")
	if p, err := DefaultProfile(); err != nil || p != ProfileOfficial {
		t.Fatalf("official: got %q, %v", p, err)
	}
	t.Setenv(EnvProfile, "hub")
	if _, err := DefaultProfile(); err == nil || !strings.Contains(err.Error(), EnvProfile) {
		t.Fatalf("bad value: want an error naming %s, got %v", EnvProfile, err)
	}
}

func TestParseRoles(t *testing.T) {
	all, err := ParseRoles("")
	if err != nil || len(all) != len(Roles) {
		t.Fatalf("empty: got %v, %v; want all roles", all, err)
	}
	got, err := ParseRoles("redis, etcd,redis")
	if err != nil || len(got) != 2 || got[0] != storekinds.Redis || got[1] != storekinds.Etcd {
		t.Fatalf("got %v, %v; want [redis etcd]", got, err)
	}
	if _, err := ParseRoles("etcd,mysql"); err == nil || !strings.Contains(err.Error(), "mysql") || !strings.Contains(err.Error(), "zookeeper") {
		t.Fatalf("want an error naming the bad and the valid roles, got %v", err)
	}
}

func TestContentHashStableAndSensitive(t *testing.T) {
	base := recipe{
		role:       storekinds.Etcd,
		dockerfile: dockerfileFor(storekinds.Etcd, "splitbrain.invalid/base:x"),
		parentID:   "sha256:aaaa",
		files:      []contextFile{{name: "etcd", mode: 0o755, data: []byte("binary")}, {name: "b.sh", mode: 0o755, data: []byte("echo")}},
	}
	ref := base.ref()
	if !strings.HasPrefix(ref, Namespace+"etcd:") || len(ref) != len(Namespace+"etcd:")+hashLen {
		t.Fatalf("ref %q: want %setcd:<%d hex>", ref, Namespace, hashLen)
	}
	// Stable: the same inputs (files in another order) give the same tag.
	same := base
	same.files = []contextFile{base.files[1], base.files[0]}
	if same.ref() != ref {
		t.Fatalf("file order changed the tag: %s vs %s", same.ref(), ref)
	}
	variants := map[string]func(r *recipe){
		"binary byte": func(r *recipe) {
			r.files = []contextFile{{name: "etcd", mode: 0o755, data: []byte("binarz")}, base.files[1]}
		},
		"file mode": func(r *recipe) {
			r.files = []contextFile{{name: "etcd", mode: 0o644, data: []byte("binary")}, base.files[1]}
		},
		"file name": func(r *recipe) {
			r.files = []contextFile{{name: "etcd2", mode: 0o755, data: []byte("binary")}, base.files[1]}
		},
		"parent id":    func(r *recipe) { r.parentID = "sha256:bbbb" },
		"dockerfile":   func(r *recipe) { r.dockerfile += "\n# changed" },
		"role":         func(r *recipe) { r.role = storekinds.Redis },
		"missing file": func(r *recipe) { r.files = base.files[:1] },
		// name/content boundary: moving a byte from the name into the data must not collide
		"boundary": func(r *recipe) {
			r.files = []contextFile{{name: "etc", mode: 0o755, data: []byte("dbinary")}, base.files[1]}
		},
	}
	for name, change := range variants {
		v := base
		v.files = append([]contextFile(nil), base.files...)
		change(&v)
		if v.contentHash() == base.contentHash() {
			t.Errorf("changing %s did not change the tag", name)
		}
	}
}

func TestBaseRefStable(t *testing.T) {
	if baseRef() != baseRef() {
		t.Fatal("base ref not stable")
	}
	if !strings.HasPrefix(baseRef(), Namespace+"base:bookworm-") {
		t.Fatalf("base ref %q", baseRef())
	}
}

func TestEmbeddedDockerfiles(t *testing.T) {
	for _, role := range Roles {
		df := dockerfileFor(role, "PARENT-REF")
		if strings.Contains(df, "{{") {
			t.Errorf("%s: unreplaced placeholder", role)
		}
		if role == RoleCandidate {
			if !strings.Contains(df, "FROM scratch") {
				t.Errorf("candidate must be FROM scratch")
			}
			continue
		}
		if !strings.Contains(df, "FROM PARENT-REF") {
			t.Errorf("%s: not FROM its parent", role)
		}
		// Every apt install cleans its caches in the same layer.
		for _, line := range strings.Split(df, "RUN ")[1:] {
			if strings.Contains(line, "apt-get install") && !strings.Contains(line, "rm -rf /var/lib/apt/lists/*") {
				t.Errorf("%s: an apt-get install step leaves apt lists behind", role)
			}
		}
		if strings.Contains(df, " zookeeper ") || strings.Contains(df, "default-jre ") {
			t.Errorf("%s: pulls the full JRE (zookeeper/default-jre packages)", role)
		}
	}
}

func TestBuildErrorMessage(t *testing.T) {
	err := error(&BuildError{Role: storekinds.Redis, Step: "Step 2/4 : RUN apt-get update", Log: []string{"E: Unable to locate package", "boom"}, Err: errors.New("exit 100")})
	msg := err.Error()
	for _, want := range []string{"redis", "Step 2/4", "exit 100", "boom"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	var be *BuildError
	if !errors.As(err, &be) || be.Role != storekinds.Redis {
		t.Fatal("errors.As failed")
	}
}

func TestTailLinesAndRing(t *testing.T) {
	got := tailLines("a\n\nb\nc\r\nd\n", 2)
	if strings.Join(got, ",") != "c,d" {
		t.Fatalf("tailLines = %v", got)
	}
	r := &ring{max: 3}
	for _, s := range []string{"1", "2", "3", "4", "5"} {
		r.add(s)
	}
	if strings.Join(r.lines, ",") != "3,4,5" {
		t.Fatalf("ring = %v", r.lines)
	}
}

func TestIsStaticELF(t *testing.T) {
	// The test binary is built with the default cgo setting; whatever it is, a non-ELF
	// file must be rejected.
	p := filepath.Join(t.TempDir(), "notelf")
	os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
	if isStaticELF(p) {
		t.Fatal("a shell script was taken for a static ELF binary")
	}
	if isStaticSplitbrain(p) {
		t.Fatal("a shell script was taken for a splitbrain binary")
	}
	exe, _ := os.Executable()
	if isStaticSplitbrain(exe) {
		t.Fatal("the test binary is not cmd/splitbrain")
	}
}

func TestLaunchForEveryRole(t *testing.T) {
	for _, p := range []Profile{ProfileLocal, ProfileOfficial} {
		for _, r := range Roles {
			l := LaunchFor(p, r)
			if r != RoleCandidate && len(l.Cmd) == 0 {
				t.Errorf("%s/%s: no command", p, r)
			}
		}
	}
	// Roles (the store kinds' roles, tools, candidate) and roleDefs are one set.
	for _, r := range Roles {
		if _, ok := roleDefs[r]; !ok {
			t.Errorf("role %s has no entry in roleDefs (internal/images/roles.go)", r)
		}
	}
	for r := range roleDefs {
		if !slices.Contains(Roles, r) {
			t.Errorf("roleDefs has %s, which no store kind (internal/storekinds) and no run uses", r)
		}
	}
	if OfficialRef(storekinds.Etcd) != "gcr.io/etcd-development/etcd:"+EtcdVersion {
		t.Errorf("official etcd ref %q does not match the local version %s", OfficialRef(storekinds.Etcd), EtcdVersion)
	}
	if OfficialRef(storekinds.Consul) != "hashicorp/consul:"+strings.TrimPrefix(ConsulVersion, "v") {
		t.Errorf("official consul ref %q does not match the local version %s", OfficialRef(storekinds.Consul), ConsulVersion)
	}
}

// A background build's host commands run under nice and its build containers at the
// minimum cpu-shares; a foreground build's run as they are.
func TestBackgroundBuildsYield(t *testing.T) {
	fg := hostCommand(context.Background(), "go", "build")
	if strings.Join(fg.Args, " ") != "go build" || buildShares(context.Background()) != 0 {
		t.Errorf("foreground: %q, shares %d", fg.Args, buildShares(context.Background()))
	}
	ctx := context.WithValue(context.Background(), backgroundKey{}, true)
	bg := hostCommand(ctx, "go", "build")
	if strings.Join(bg.Args, " ") != "nice -n 19 go build" || buildShares(ctx) != minCPUShares {
		t.Errorf("background: %q, shares %d", bg.Args, buildShares(ctx))
	}
}

// A library folder's prepare step runs once in the build, after the adapter is copied in and
// before the entrypoint; a folder without one gets no such step.
func TestLibraryDockerfileRunsPrepare(t *testing.T) {
	spec := LibrarySpec{Folder: "x", Debian: []string{"python3"}, Files: []LibraryFile{{Name: "candidate", Mode: 0o755}}}
	if df := libraryDockerfile("base", spec); strings.Contains(df, LibraryPrepare) {
		t.Errorf("no prepare file, yet:\n%s", df)
	}
	spec.Files = append(spec.Files, LibraryFile{Name: LibraryPrepare, Mode: 0o755})
	df := libraryDockerfile("base", spec)
	copyAt, runAt := strings.Index(df, "COPY lib "+LibraryDir), strings.Index(df, "RUN "+LibraryDir+"/"+LibraryPrepare+"\n")
	if copyAt < 0 || runAt < copyAt || runAt > strings.Index(df, "ENTRYPOINT") {
		t.Errorf("want the prepare step after the COPY and before the ENTRYPOINT:\n%s", df)
	}
}
