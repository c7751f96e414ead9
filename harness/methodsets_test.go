package harness

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// maxMethodSetFiles: a type's methods are read in at most this many files of the package, so
// each stage of the run has one place to read its API (docs/architecture.md, harness).
const maxMethodSetFiles = 3

// TestMethodSetsStayTogether parses the harness package's source files (not its tests) and
// fails for every type whose methods are spread over more than maxMethodSetFiles files.
func TestMethodSetsStayTogether(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	if len(files) < 10 {
		t.Fatalf("parsed %d files: the test must run in the harness directory", len(files))
	}
	for _, msg := range spreadMethodSets(files, maxMethodSetFiles) {
		t.Error(msg)
	}
}

// The check itself: a method set over four files is named with its files; one over three
// is not; a generic receiver counts as its type.
func TestSpreadMethodSetsNamesTypeAndFiles(t *testing.T) {
	src := map[string]string{
		"a.go": "package p\ntype wide struct{}\nfunc (w *wide) a() {}\ntype narrow struct{}\nfunc (narrow) a() {}\ntype gen[T any] struct{}\nfunc (g *gen[T]) a() {}",
		"b.go": "package p\nfunc (w wide) b() {}\nfunc (narrow) b() {}\nfunc (g gen[T]) b() {}",
		"c.go": "package p\nfunc (w *wide) c() {}\nfunc (narrow) c() {}\nfunc (g *gen[T]) c() {}",
		"d.go": "package p\nfunc (w *wide) d() {}\nfunc (g *gen[T]) d() {}\nfunc helper() {}",
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for name, s := range src {
		f, err := parser.ParseFile(fset, name, s, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	got := spreadMethodSets(files, 3)
	want := []string{
		"the methods of gen are spread over 4 files (a.go, b.go, c.go, d.go); at most 3: move them to the type's own files, or split the type",
		"the methods of wide are spread over 4 files (a.go, b.go, c.go, d.go); at most 3: move them to the type's own files, or split the type",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := spreadMethodSets(files, 4); len(got) != 0 {
		t.Errorf("limit 4: got %q, want none", got)
	}
}

// spreadMethodSets groups the methods of files by receiver type and describes each type whose
// methods lie in more than max files, sorted by type name.
func spreadMethodSets(files map[string]*ast.File, max int) []string {
	byType := map[string]map[string]bool{}
	for name, f := range files {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
				continue
			}
			typ := receiverTypeName(fd.Recv.List[0].Type)
			if byType[typ] == nil {
				byType[typ] = map[string]bool{}
			}
			byType[typ][name] = true
		}
	}
	var out []string
	for typ, in := range byType {
		if len(in) <= max {
			continue
		}
		names := make([]string, 0, len(in))
		for name := range in {
			names = append(names, filepath.Base(name))
		}
		sort.Strings(names)
		out = append(out, fmt.Sprintf("the methods of %s are spread over %d files (%s); at most %d: move them to the type's own files, or split the type",
			typ, len(names), strings.Join(names, ", "), max))
	}
	sort.Strings(out)
	return out
}

// receiverTypeName is the type a receiver belongs to: T for T, *T, T[P] and *T[P, Q].
func receiverTypeName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprintf("%T", e) // not valid Go; the compiler says so first
		}
	}
}
