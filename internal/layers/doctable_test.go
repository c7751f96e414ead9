package layers

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The layer table of docs/architecture.md says what Layers says: each row's packages are
// its layer's (a "dir/..." item stands for the packages below dir), and no layer is missing.
func TestDocLayerTableMatches(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| ([0-9]+) [^|]*\\| ([^|]*)\\|")
	item := regexp.MustCompile("`([a-z][a-z0-9/._-]*)`")
	seen := map[int]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if n >= len(Layers) {
			t.Errorf("docs/architecture.md has a layer %d; layers.go has %d layers", n, len(Layers))
			continue
		}
		seen[n] = true
		var exact, prefixes []string
		for _, it := range item.FindAllStringSubmatch(m[2], -1) {
			if p, ok := strings.CutSuffix(it[1], "/..."); ok {
				prefixes = append(prefixes, p+"/")
			} else {
				exact = append(exact, it[1])
			}
		}
		for _, pkg := range Layers[n] {
			if !slices.Contains(exact, pkg) && !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(pkg, p) }) {
				t.Errorf("layer %d: package %s is in layers.go but not in the doc's row", n, pkg)
			}
		}
		for _, pkg := range exact {
			if !slices.Contains(Layers[n], pkg) {
				t.Errorf("layer %d: the doc's row names %s, which layers.go does not put in that layer", n, pkg)
			}
		}
	}
	for n := range Layers {
		if !seen[n] {
			t.Errorf("layer %d has no row in docs/architecture.md's layer table", n)
		}
	}
}
