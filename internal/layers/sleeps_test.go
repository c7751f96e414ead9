package layers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestNoFixedSleepsInTests fails on a time.Sleep (or a `<-time.After(d)` on its own) in any
// test file of the module, chaos tests included, that is neither the poll interval of a `for`
// loop with a deadline nor annotated with a `// sleep: <reason>` comment on its line or the
// line above. A fixed "let it happen" sleep is a guess at how long something takes; on a loaded
// machine the guess is wrong, and the test flakes. Wait for the event or state instead
// (docs/performance.md, "Test-suite determinism").
func TestNoFixedSleepsInTests(t *testing.T) {
	found, err := fixedSleeps("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: a fixed sleep: wait for the event or state it stands for (a channel, a history event, a poll with a deadline), or say on the line above, in a comment starting `// sleep:`, why no event exists", f)
	}
}

// TestFixedSleepsSample: the checker reports exactly the lines of testdata/sleeps marked
// `// want`, and accepts the poll loops and annotated sleeps there.
func TestFixedSleepsSample(t *testing.T) {
	dir := filepath.Join("testdata", "sleeps")
	got, err := fixedSleeps(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "// want") {
				rel, _ := filepath.Rel(dir, path)
				want = append(want, fmt.Sprintf("%s:%d", rel, i+1))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("no `// want` lines in testdata/sleeps: the sample cannot show the check fails")
	}
	if !slices.Equal(got, want) {
		t.Errorf("reported\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// fixedSleeps walks root for *_test.go files (skipping testdata, hidden directories and
// nested modules, which have their own rules) and returns "path:line" of each fixed sleep,
// paths relative to root, in walk order. A directory named testdata is walked when it is
// root itself: that is how the sample is checked.
func fixedSleeps(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, line := range sleepsIn(fset, f) {
			out = append(out, rel+":"+strconv.Itoa(line))
		}
		return nil
	})
	return out, err
}

// sleepAnnotation is the comment that says why a sleep stands: `// sleep: <reason>`.
var sleepAnnotation = regexp.MustCompile(`^//\s*sleep:\s*\S`)

// sleepsIn returns the lines of f's fixed sleeps.
func sleepsIn(fset *token.FileSet, f *ast.File) []int {
	timeName := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "time" {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	if timeName == "" || timeName == "_" {
		return nil
	}
	isTimeFunc := func(e ast.Expr, names ...string) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == timeName && slices.Contains(names, sel.Sel.Name)
	}
	// Lines annotated: the line of a `// sleep:` comment, and the line after the comment
	// group that holds one (the annotation may run on over several lines).
	annotated := map[int]bool{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			if sleepAnnotation.MatchString(c.Text) {
				annotated[fset.Position(c.Pos()).Line] = true
				annotated[fset.Position(g.End()).Line+1] = true
			}
		}
	}
	// hasDeadline: the loop compares the clock or reads a context, so its sleeps are a poll
	// interval.
	hasDeadline := func(loop *ast.ForStmt) bool {
		found := false
		ast.Inspect(loop, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || found {
				return !found
			}
			if isTimeFunc(call.Fun, "Since", "Until", "After") {
				found = true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			// time.Now() compared or offset (a reading only printed is no deadline)
			if now, ok := sel.X.(*ast.CallExpr); ok && isTimeFunc(now.Fun, "Now") && slices.Contains([]string{"After", "Before", "Add", "Sub", "Compare"}, sel.Sel.Name) {
				found = true
			}
			if len(call.Args) == 0 && (sel.Sel.Name == "Err" || sel.Sel.Name == "Done") { // a context's
				found = true
			}
			return !found
		})
		return found
	}
	var lines []int
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		stack = append(stack, n)
		var at ast.Node // the sleeping expression
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if isTimeFunc(x, "Sleep") {
				at = x
			}
		case *ast.UnaryExpr: // a bare `<-time.After(d)` is a sleep by another name
			if call, ok := x.X.(*ast.CallExpr); ok && x.Op == token.ARROW && isTimeFunc(call.Fun, "After") && len(stack) >= 3 {
				_, bare := stack[len(stack)-2].(*ast.ExprStmt)
				switch {
				case !bare:
				case len(stack) >= 5 && isCommClause(stack[len(stack)-3]):
					// A timeout case beside others; alone in its select it is a sleep too.
					if sel, ok := stack[len(stack)-5].(*ast.SelectStmt); ok && len(sel.Body.List) == 1 {
						at = x
					}
				default:
					at = x
				}
			}
		}
		if at == nil {
			return true
		}
		line := fset.Position(at.Pos()).Line
		if annotated[line] {
			return true
		}
		// The poll interval of a loop: the sleep's statement is the loop's post statement or
		// a statement of its body, and the loop has a deadline.
		if stmt, loop := enclosingStmtAndLoop(stack); loop != nil && hasDeadline(loop) {
			if loop.Post == stmt || slices.Contains(loop.Body.List, stmt) {
				return true
			}
		}
		lines = append(lines, line)
		return true
	})
	return lines
}

func isCommClause(n ast.Node) bool { _, ok := n.(*ast.CommClause); return ok }

// enclosingStmtAndLoop finds, walking up from the top of stack, the innermost ExprStmt that
// holds it and the ForStmt that directly holds that statement (nil if none does).
func enclosingStmtAndLoop(stack []ast.Node) (ast.Stmt, *ast.ForStmt) {
	for i := len(stack) - 1; i > 0; i-- {
		if _, ok := stack[i].(*ast.FuncLit); ok {
			return nil, nil
		}
		es, ok := stack[i].(*ast.ExprStmt)
		if !ok {
			continue
		}
		switch p := stack[i-1].(type) {
		case *ast.ForStmt: // the post statement
			return es, p
		case *ast.BlockStmt:
			if i >= 2 {
				if loop, ok := stack[i-2].(*ast.ForStmt); ok {
					return es, loop
				}
			}
		}
		return es, nil
	}
	return nil, nil
}
