package conventions

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The directories of the main module whose code logs.
var roots = []string{"../../cmd", "../../pkg", "../../test", "../../hack"}

// Kinds that may open a log message capitalized: a one-capital word that is
// not a kind is an ordinary word ("Starting ...") and must be lower case.
var kinds = map[string]bool{"Machine": true, "Node": true, "Lease": true, "Pod": true, "Secret": true}

// TestLogStyle: every logr or klog structured log call in non-test code has a
// message that starts in lower case (a kind or an identifier such as
// MachineSet or API keeps its case) without a trailing period, and its key for
// an error is "err" (klog's ErrorS key) with the error itself as the value.
// golangci-lint's loggercheck checks only that keys and values pair up.
// Breaks if: a message becomes "Starting the manager", or a pair is
// "error", err or "err", err.Error().
func TestLogStyle(t *testing.T) {
	calls := 0
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || d.Name() == "tools") {
				return filepath.SkipDir // hack/tools holds other modules; testdata is not ours to log from
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				for _, p := range logProblems(call) {
					t.Errorf("%s: %s", fset.Position(call.Pos()), p)
				}
				if _, ok := logMessage(call); ok {
					calls++
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if calls < 100 {
		t.Fatalf("found %d log calls; the scan misses the tree's logs and would be vacuous", calls)
	}
}

// logMessage returns the index of the message argument of a structured log
// call: Info, InfoS (index 0), Error, ErrorS (index 1), whose message is a
// string literal or a concatenation starting with one.
func logMessage(call *ast.CallExpr) (int, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return 0, false
	}
	if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "http" {
		return 0, false // http.Error(w, body, code) writes a response
	}
	i := 0
	switch sel.Sel.Name {
	case "Info", "InfoS":
	case "Error", "ErrorS":
		i = 1
	default:
		return 0, false
	}
	if len(call.Args) <= i {
		return 0, false
	}
	_, ok = leadingString(call.Args[i])
	return i, ok
}

func logProblems(call *ast.CallExpr) []string {
	i, ok := logMessage(call)
	if !ok {
		return nil
	}
	var problems []string
	msg, _ := leadingString(call.Args[i])
	if w := firstWord(msg); w != "" && isOrdinaryCapitalized(w) {
		problems = append(problems, "log message "+strconv.Quote(msg)+" starts with a capital letter; messages start in lower case")
	}
	if lit, ok := call.Args[i].(*ast.BasicLit); ok && strings.HasSuffix(msg, ".") {
		problems = append(problems, "log message "+lit.Value+" ends with a period")
	}
	kvs := call.Args[i+1:]
	for j := 0; j+1 < len(kvs); j += 2 {
		key, _ := leadingString(kvs[j])
		switch v := kvs[j+1].(type) {
		case *ast.CallExpr:
			if s, ok := v.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Error" && len(v.Args) == 0 {
				problems = append(problems, "log value of "+strconv.Quote(key)+" is an Error() string; log the error itself under \"err\"")
			}
		case *ast.Ident:
			if (v.Name == "err" || strings.HasSuffix(v.Name, "Err")) && key != "err" {
				problems = append(problems, "error "+v.Name+" logged under "+strconv.Quote(key)+"; the key for an error is \"err\"")
			}
		}
		if key == "error" {
			problems = append(problems, "log key \"error\"; the key for an error is \"err\"")
		}
	}
	return problems
}

// leadingString is the string literal e is or starts with ("a " + b).
func leadingString(e ast.Expr) (string, bool) {
	for {
		b, ok := e.(*ast.BinaryExpr)
		if !ok || b.Op != token.ADD {
			break
		}
		e = b.X
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func firstWord(s string) string {
	end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
	if end < 0 {
		return s
	}
	return s[:end]
}

// isOrdinaryCapitalized: w starts with its only capital letter and is not a
// kind (so "Starting", not "MachineSet", "API" or "Node").
func isOrdinaryCapitalized(w string) bool {
	r, size := utf8.DecodeRuneInString(w)
	if !unicode.IsUpper(r) || kinds[w] {
		return false
	}
	return !strings.ContainsFunc(w[size:], unicode.IsUpper)
}

// TestLogProblems: the checks of TestLogStyle on calls written for them.
// Breaks if: logProblems stops seeing any one of the cases.
func TestLogProblems(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{`log.Info("starting the manager", "node", n)`, 0},
		{`log.V(2).Info("MachineSet is invalid", "err", err)`, 0},
		{`klog.InfoS("API server reachable")`, 0},
		{`log.Info("Node is gone")`, 0},
		{`log.Info("Starting the manager")`, 1},
		{`klog.ErrorS(err, "Refusing a request")`, 1},
		{`log.Info("started.")`, 1},
		{`log.Info("waiting", "error", err)`, 2},
		{`log.Info("waiting", "err", err.Error())`, 1},
		{`log.Info("waiting", "reason", readErr)`, 1},
		{`log.Error(err, "listing Nodes", "node", n)`, 0},
		{`t.Errorf("Bad %s", x)`, 0},
		{`http.Error(w, "Unauthorized", http.StatusUnauthorized)`, 0},
	} {
		e, err := parser.ParseExpr(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		if got := logProblems(e.(*ast.CallExpr)); len(got) != tc.want {
			t.Errorf("%s: %d problems %q, want %d", tc.src, len(got), got, tc.want)
		}
	}
}
