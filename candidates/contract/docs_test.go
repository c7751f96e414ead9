package contract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// docEnvTable is the set of variables in the first table of docs/candidates.md section 1
// ("Start and environment"). A row "`SPLITBRAIN_STORE_USER` / `_PASSWORD`" names
// SPLITBRAIN_STORE_USER and SPLITBRAIN_STORE_PASSWORD.
func docEnvTable(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../docs/candidates.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## 1. ")
	if start < 0 {
		t.Fatal(`docs/candidates.md has no "## 1. " section`)
	}
	sec := doc[start+1:]
	if end := strings.Index(sec, "\n## "); end >= 0 {
		sec = sec[:end]
	}
	names := map[string]bool{}
	inTable := false
	code := regexp.MustCompile("`([A-Z_]+)`")
	for _, line := range strings.Split(sec, "\n") {
		if strings.HasPrefix(line, "| Variable |") {
			inTable = true
			continue
		}
		if !inTable {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break // the table ended
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		prefix := ""
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			if strings.HasPrefix(name, "_") {
				name = prefix + name
			} else if i := strings.LastIndex(name, "_"); i > 0 {
				prefix = name[:i]
			}
			names[name] = true
		}
	}
	if len(names) == 0 {
		t.Fatal("docs/candidates.md section 1: no variable table found")
	}
	return names
}

// envConstants are the Env* constants of contract.go: name -> the variable.
func envConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "contract.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, id := range vs.Names {
			if !strings.HasPrefix(id.Name, "Env") || i >= len(vs.Values) {
				continue
			}
			if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, _ := strconv.Unquote(lit.Value)
				out[id.Name] = v
			}
		}
		return true
	})
	return out
}

// TestDocEnvTable keeps docs/candidates.md section 1 true: its table lists exactly the
// contract's Env* variables (plus PYTHONUNBUFFERED, which the harness sets beside them), and
// every variable Config.Environ can set is in it.
func TestDocEnvTable(t *testing.T) {
	doc := docEnvTable(t)
	consts := envConstants(t)
	want := map[string]bool{"PYTHONUNBUFFERED": true} // harness.candidateSpec
	for c, v := range consts {
		want[v] = true
		if !doc[v] {
			t.Errorf("docs/candidates.md section 1 does not list %s (contract.%s)", v, c)
		}
	}
	for v := range doc {
		if !want[v] {
			t.Errorf("docs/candidates.md section 1 lists %s, which is no contract.Env* constant", v)
		}
	}
	full := Config{NodeID: "c1", Store: "etcd", Endpoints: []string{"e:1"}, Peers: []string{"c1:7000"}, ListenPort: 7000,
		ResourceURL: "http://r", LeaseTTL: time.Second, WriteInterval: time.Second, LeaderWork: time.Second,
		RenewInterval: time.Second, RetryInterval: time.Second, ClockFile: "/f", ElectionName: "e", Recipe: "r",
		StoreUser: "u", StorePassword: "p", StoreDatabase: "d", Kubeconfig: "/k", PodName: "p", FenceURL: "http://f"}
	var set []string
	for _, kv := range full.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		set = append(set, k)
		if !doc[k] {
			t.Errorf("Config.Environ sets %s, which docs/candidates.md section 1 does not list", k)
		}
	}
	if !slices.Contains(set, EnvFenceURL) {
		t.Errorf("Config.Environ with a fence URL does not set %s", EnvFenceURL)
	}
}
