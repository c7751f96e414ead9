package layers

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/splitbrain-chaos/splitbrain"

// TestImportsPointDown runs `go list` over the module (with and without the chaos tag) and
// fails on any import of a package in a higher layer, and on any package missing from Layers.
func TestImportsPointDown(t *testing.T) {
	for _, tags := range []string{"", "chaos"} {
		out := goList(t, "-tags", tags, "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", module+"/...")
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			pkg, imports, _ := strings.Cut(sc.Text(), ":")
			from := rel(pkg)
			if from == "internal/layers" {
				continue
			}
			lf := Layer(from)
			if lf < 0 {
				t.Errorf("package %s has no layer: add it to layers.Layers (internal/layers/layers.go) and docs/architecture.md", from)
				continue
			}
			for _, imp := range strings.Fields(imports) {
				if !strings.HasPrefix(imp, module+"/") {
					continue
				}
				to := rel(imp)
				if lt := Layer(to); lt > lf {
					t.Errorf("%s (layer %d) imports %s (layer %d): imports must point down the data path (docs/architecture.md)", from, lf, to, lt)
				}
			}
		}
	}
}

func TestEveryLayerPackageExists(t *testing.T) {
	out := goList(t, "-tags", "chaos", module+"/...")
	have := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		have[rel(p)] = true
	}
	for _, layer := range Layers {
		for _, p := range layer {
			if !have[p] {
				t.Errorf("layers.Layers names %s, which is not a package of the module: remove it", p)
			}
		}
	}
}

// goList runs go list with args in the module's root and returns its output.
func goList(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func rel(pkg string) string { return strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/") }

// TestLightPackagesStayLight fails when a fact reader (history, checkers, reports, nemesis)
// links a store client library, directly or through any chain of imports: those belong to
// internal/stores' launchers and candidates' recipes. Facts go in a leaf (internal/storekinds,
// internal/faultkinds) instead.
func TestLightPackagesStayLight(t *testing.T) {
	for _, pkg := range Light {
		out := goList(t, "-deps", "./"+pkg)
		deps := strings.Fields(string(out))
		var heavy []string
		for _, d := range deps {
			for _, h := range Heavy {
				if strings.HasPrefix(d, h) {
					heavy = append(heavy, d)
					break
				}
			}
		}
		if slices.Contains(Leaves, pkg) {
			for _, d := range deps {
				if first, _, _ := strings.Cut(d, "/"); strings.Contains(first, ".") && d != module+"/"+pkg {
					t.Errorf("%s is a leaf of facts and may import only the standard library, not %s", pkg, d)
				}
			}
		}
		if len(heavy) > 0 {
			t.Errorf("%s links %d store client packages (of %d dependencies), e.g. %s: it must read facts from a leaf package (internal/storekinds, internal/faultkinds), not import a launcher; `go list -deps ./%s` shows the chain",
				pkg, len(heavy), len(deps), heavy[0], pkg)
		}
	}
}

// TestUserAPIStaysLight: the packages a user's go test imports link no store client (nor
// Docker's) and stay a small fraction of the 1,151 packages splitbraintest linked when it ran
// the checks in process (issue 45).
func TestUserAPIStaysLight(t *testing.T) {
	for _, pkg := range UserAPI {
		// With -test: what a package's own tests import is not compiled into a user's test,
		// but a user's go mod tidy lists its modules (tidy loads the tests of dependencies).
		out := goList(t, "-deps", "-test", "./"+pkg)
		deps := strings.Fields(string(out))
		for _, d := range deps {
			for _, h := range StoreClients {
				if strings.HasPrefix(d, h) {
					t.Errorf("%s links %s: a user's go test must not compile a store client; run the work in the splitbrain binary (`go list -deps ./%s` shows the chain)", pkg, d, pkg)
				}
			}
		}
		linked := 0 // without the test's own packages ("pkg [pkg.test]", "pkg.test")
		for _, d := range deps {
			if !strings.Contains(d, " ") && !strings.HasSuffix(d, ".test") {
				linked++
			}
		}
		if linked > UserAPIMaxDeps {
			t.Errorf("%s and its tests link %d packages, over the bound of %d: what was added? (`go list -deps -test ./%s`)", pkg, linked, UserAPIMaxDeps, pkg)
		}
	}
}

// TestCoreBuildStaysLight: `make chaos` starts on the core build (-tags core) so a bare
// machine's first verdict waits for no Heavy client; it must link none, even indirectly, and
// still be a whole binary (make vet type-checks it: go vet -tags core ./cmd/splitbrain/).
func TestCoreBuildStaysLight(t *testing.T) {
	deps := strings.Fields(string(goList(t, "-deps", "-tags", "core", "./cmd/splitbrain")))
	for _, d := range deps {
		for _, h := range Heavy {
			if strings.HasPrefix(d, h) {
				t.Errorf("the core build links %s: a file that imports it needs //go:build !core and a nil entry in an unlinked_core.go (`go list -deps -tags core ./cmd/splitbrain`)", d)
			}
		}
	}
	if full := strings.Fields(string(goList(t, "-deps", "./cmd/splitbrain"))); len(deps) >= len(full) {
		t.Errorf("the core build links %d packages, the full one %d: the core leaves nothing out", len(deps), len(full))
	}
}
