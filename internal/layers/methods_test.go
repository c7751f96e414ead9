package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxMethodFiles is how many files one type's methods may span: a reader finds a type's
// behaviour in its own file and one or two beside it.
const maxMethodFiles = 3

// methodFileDebt are the types whose methods still span more files, with today's count: it
// may only go down (lower it here when it does). nemesis.Nemesis waits for the nemesis to be
// split by mechanism (issue 45); the Engine's and the image builder's files are by subject.
var methodFileDebt = map[string]int{
	"internal/images.builder":  5,
	"internal/platform.Engine": 6,
	"nemesis.Nemesis":          10,
}

// TestMethodsStayTogether fails when a type's methods (outside tests) span more than
// maxMethodFiles files anywhere in the module, beyond the debt listed above.
func TestMethodsStayTogether(t *testing.T) {
	spans := map[string]map[string]bool{}
	root := "../.."
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
				continue
			}
			if name := receiverName(fd.Recv.List[0].Type); name != "" {
				k := filepath.ToSlash(dir) + "." + name
				if spans[k] == nil {
					spans[k] = map[string]bool{}
				}
				spans[k][filepath.Base(p)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) < 50 {
		t.Fatalf("found methods of only %d types: the walk missed the module", len(spans))
	}
	var types []string
	for k := range spans {
		types = append(types, k)
	}
	sort.Strings(types)
	for _, k := range types {
		n, allowed := len(spans[k]), maxMethodFiles
		if debt, ok := methodFileDebt[k]; ok {
			allowed = debt
			if n < debt {
				t.Errorf("%s's methods now span %d files, fewer than its listed debt %d: lower it in methodFileDebt", k, n, debt)
			}
		}
		if n > allowed {
			var files []string
			for f := range spans[k] {
				files = append(files, f)
			}
			sort.Strings(files)
			t.Errorf("%s's methods span %d files (%s), more than %d: keep a type's methods in its own file and at most %d beside it", k, n, strings.Join(files, ", "), allowed, maxMethodFiles-1)
		}
	}
	for k := range methodFileDebt {
		if spans[k] == nil {
			t.Errorf("%s is listed in methodFileDebt but has no methods any more: remove it", k)
		}
	}
}

// receiverName is the type name of a method receiver (T, *T, T[P], *T[P]).
func receiverName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
