package conventions

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReconcilerOptions: every controller's Reconciler keeps its Options in a
// field opts (not embedded, not copied field by field), so each reads its
// configuration one way and withDefaults is the one place defaults are set.
// Breaks if: a Reconciler embeds Options again or drops its opts field.
func TestReconcilerOptions(t *testing.T) {
	dirs, err := filepath.Glob("../../pkg/controller/*")
	if err != nil {
		t.Fatal(err)
	}
	reconcilers := 0
	for _, dir := range dirs {
		if filepath.Base(dir) == "internal" {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok || ts.Name.Name != "Reconciler" {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return false
				}
				reconcilers++
				if problem := optionsField(st); problem != "" {
					t.Errorf("%s: Reconciler %s", fset.Position(ts.Pos()), problem)
				}
				return false
			})
		}
	}
	if reconcilers < 6 {
		t.Fatalf("found %d Reconcilers under pkg/controller; the check would be vacuous", reconcilers)
	}
}

func optionsField(st *ast.StructType) string {
	found := false
	for _, f := range st.Fields.List {
		id, ok := f.Type.(*ast.Ident)
		if !ok || id.Name != "Options" {
			continue
		}
		if len(f.Names) == 0 {
			return "embeds Options; keep them in a field opts"
		}
		found = found || f.Names[0].Name == "opts"
	}
	if !found {
		return "has no field opts Options"
	}
	return ""
}
