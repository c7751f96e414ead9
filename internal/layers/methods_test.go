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

// TestMethodsStayTogether fails when a type's methods (outside tests) span more than
// maxMethodFiles files anywhere in the module. There is no list of exceptions.
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
		if n := len(spans[k]); n > maxMethodFiles {
			var files []string
			for f := range spans[k] {
				files = append(files, f)
			}
			sort.Strings(files)
			t.Errorf("%s's methods span %d files (%s), more than %d: keep a type's methods in its own file and at most %d beside it", k, n, strings.Join(files, ", "), maxMethodFiles, maxMethodFiles-1)
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
