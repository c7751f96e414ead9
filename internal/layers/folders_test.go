package layers

import (
	"bufio"
	"bytes"
	"sort"
	"strings"
	"testing"
)

// TestFoldersPointDown fails when the module's top-level folders import each other in a
// circle. The folders are what a reader sees first; with no circle they stack in floors
// where every import points down, as the packages do within Layers (a folder may hold
// packages of several layers: internal/ holds the platform under the stages' launchers).
func TestFoldersPointDown(t *testing.T) {
	for _, tags := range []string{"", "chaos"} {
		out := goList(t, "-tags", tags, "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", module+"/...")
		edges := map[string]map[string]string{} // folder → imported folder → one package pair
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			pkg, imports, _ := strings.Cut(sc.Text(), ":")
			from := rel(pkg)
			for _, imp := range strings.Fields(imports) {
				if !strings.HasPrefix(imp, module+"/") {
					continue
				}
				to := rel(imp)
				ff, tf := topFolder(from), topFolder(to)
				if ff == tf {
					continue
				}
				if edges[ff] == nil {
					edges[ff] = map[string]string{}
				}
				edges[ff][tf] = from + " imports " + to
			}
		}
		if len(edges) < 8 {
			t.Fatalf("tags %q: only %d folders import others: the listing missed the module", tags, len(edges))
		}
		var bad []string
		for from, tos := range edges {
			for to, why := range tos {
				if reaches(edges, to, from) {
					bad = append(bad, why)
				}
			}
		}
		sort.Strings(bad)
		for _, b := range bad {
			f := strings.Fields(b)
			t.Errorf("tags %q: %s, and folder %s/ imports folder %s/ back (directly or through others): move a package to the folder of its layer (docs/architecture.md)", tags, b, topFolder(f[2]), topFolder(f[0]))
		}
	}
}

func topFolder(pkg string) string {
	first, _, _ := strings.Cut(pkg, "/")
	return first
}

// reaches reports whether folder from imports folder to, directly or through others.
func reaches(edges map[string]map[string]string, from, to string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(f string) bool {
		if f == to {
			return true
		}
		if seen[f] {
			return false
		}
		seen[f] = true
		for next := range edges[f] {
			if walk(next) {
				return true
			}
		}
		return false
	}
	return walk(from)
}
