package names

import (
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestLeaf: the package imports nothing, so every binary may import it.
func TestLeaf(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			t.Errorf("%s imports %s; package names must import nothing", e.Name(), imp.Path.Value)
		}
	}
	if files == 0 {
		t.Fatal("no Go files: the check would be vacuous")
	}
}
