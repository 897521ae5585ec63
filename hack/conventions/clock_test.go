package conventions

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestClockType: no code takes its time from a func() time.Time; a clock is a
// k8s.io/utils/clock PassiveClock (Clock where timers are), so tests pass the
// fakes of k8s.io/utils/clock/testing everywhere.
// Breaks if: an Options field or parameter becomes "Now func() time.Time".
func TestClockType(t *testing.T) {
	files := 0
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				if d != nil && d.IsDir() && d.Name() == "tools" {
					return filepath.SkipDir
				}
				return err
			}
			files++
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			var inspect func(n ast.Node) bool
			inspect = func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl: // a method Now() time.Time implements a clock
					if n.Body != nil {
						ast.Inspect(n.Body, inspect)
					}
					return false
				case *ast.InterfaceType:
					return false
				case *ast.FuncType:
					if isTimeSource(n) {
						t.Errorf("%s: func() time.Time; use a k8s.io/utils/clock PassiveClock", fset.Position(n.Pos()))
					}
				}
				return true
			}
			ast.Inspect(f, inspect)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 100 {
		t.Fatalf("scanned %d files; the check would be vacuous", files)
	}
}

func isTimeSource(ft *ast.FuncType) bool {
	if ft.Params.NumFields() != 0 || ft.Results.NumFields() != 1 {
		return false
	}
	sel, ok := ft.Results.List[0].Type.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Time" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "time"
}
