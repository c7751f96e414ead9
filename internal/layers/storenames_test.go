package layers

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// contractStoreName is a store kind spelled through the candidate contract.
var contractStoreName = regexp.MustCompile(`\bcontract\.Store(Etcd|ZooKeeper|Postgres|Redis|RedisMulti|DynamoDB|Consul|Kubernetes|None)\b`)

// TestOneSpellingOfAStoreName: inside the module a store kind is named storekinds.X. The
// contract's Store* constants are that name for candidates written outside the module, so
// only code that stands for such a candidate (examples/, testdata/) may use them.
func TestOneSpellingOfAStoreName(t *testing.T) {
	root := "../.."
	var bad []string
	seen := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+"/"))
		if d.IsDir() {
			if rel == "examples" || rel == "candidates/contract" || d.Name() == "testdata" || (p != root && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		seen++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if m := contractStoreName.Find(b); m != nil {
			bad = append(bad, rel+": "+string(m))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 200 {
		t.Fatalf("walked only %d Go files: the walk missed the module", seen)
	}
	for _, b := range bad {
		t.Errorf("%s: name the store kind storekinds.X (internal/storekinds) inside the module", b)
	}
}
