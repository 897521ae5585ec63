package render

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ (go test ./pkg/operator/render -update)")

// TestGolden compares the rendered YAML of every case with
// testdata/<case>/<FileName>. Run with -update to rewrite them.
func TestGolden(t *testing.T) {
	for _, tc := range renderCases() {
		t.Run(tc.name, func(t *testing.T) {
			_, objs := mustRender(t, tc.in)
			got := map[string][]byte{}
			for i, obj := range objs {
				data, err := ToYAML(obj)
				if err != nil {
					t.Fatal(err)
				}
				got[FileName(i, obj)] = data
			}
			dir := filepath.Join("testdata", tc.name)
			if *update {
				writeGolden(t, dir, got)
				return
			}
			compareGolden(t, dir, got)
		})
	}
}

func writeGolden(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func compareGolden(t *testing.T, dir string, got map[string][]byte) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/operator/render -update to create the golden files)", err)
	}
	want := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		want[e.Name()] = data
	}
	for _, name := range sortedKeys(want) {
		if _, ok := got[name]; !ok {
			t.Errorf("%s: golden file is no longer rendered", filepath.Join(dir, name))
		}
	}
	for _, name := range sortedKeys(got) {
		w, ok := want[name]
		if !ok {
			t.Errorf("%s: rendered but has no golden file", filepath.Join(dir, name))
			continue
		}
		if string(w) != string(got[name]) {
			t.Errorf("%s differs from the rendered object (-golden +rendered):\n%s", filepath.Join(dir, name), lineDiff(string(w), string(got[name])))
		}
	}
	if t.Failed() {
		t.Log("if the change is intended, run: go test ./pkg/operator/render -update")
	}
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// lineDiff is a small line diff (longest common subsequence) printing the
// changed lines with two lines of context and the line numbers of a.
func lineDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	// lcs[i][j] = length of the LCS of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		n    int
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			lines = append(lines, line{' ', i + 1, x[i]})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, line{'-', i + 1, x[i]})
			i++
		default:
			lines = append(lines, line{'+', i + 1, y[j]})
			j++
		}
	}
	const context = 2
	var out strings.Builder
	last := -1
	for k, l := range lines {
		show := false
		for d := -context; d <= context; d++ {
			if k+d >= 0 && k+d < len(lines) && lines[k+d].op != ' ' {
				show = true
				break
			}
		}
		if !show {
			continue
		}
		if last >= 0 && k != last+1 {
			out.WriteString("  ...\n")
		}
		if l.op == '+' {
			fmt.Fprintf(&out, "+      | %s\n", l.text)
		} else {
			fmt.Fprintf(&out, "%c %4d | %s\n", l.op, l.n, l.text)
		}
		last = k
	}
	return out.String()
}
