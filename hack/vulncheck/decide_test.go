package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sym(id, module, version, fixed string) finding {
	return finding{OSV: id, FixedVersion: fixed, Trace: []frame{
		{Module: module, Version: version, Package: "p", Function: "Vulnerable"},
		{Module: "ours", Package: "ours/pkg", Function: "Caller", Position: &position{Filename: "pkg/x.go", Line: 7}},
	}}
}

func imported(id, module, version string) finding {
	return finding{OSV: id, Trace: []frame{{Module: module, Version: version, Package: "p"}}}
}

func ids(vs []vuln) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.ID+"/"+v.Module)
	}
	return strings.Join(out, ",")
}

func lineIDs(as []acceptance) string {
	var out []string
	for _, a := range as {
		out = append(out, a.ID)
	}
	return strings.Join(out, ",")
}

// Breaks if: decide accepted a module (non-stdlib) finding, accepted a line
// of another toolchain, counted an imported-only finding as reachable, or
// let a line for this toolchain that matched nothing pass.
func TestDecide(t *testing.T) {
	const tc = "go1.26.8"
	accept := func(id, toolchain string) acceptance {
		return acceptance{ID: id, Toolchain: toolchain, Reason: "r", Line: 1}
	}
	cases := []struct {
		name                                   string
		findings                               []finding
		accepted                               []acceptance
		failing, acceptedIDs, unreached, stale string
		ok                                     bool
	}{
		{name: "clean", ok: true},
		{
			name:     "reachable module finding fails",
			findings: []finding{sym("GO-2026-0001", "golang.org/x/net", "v0.50.0", "v0.51.0")},
			failing:  "GO-2026-0001/golang.org/x/net",
		},
		{
			name:      "imported only is reported, not failing",
			findings:  []finding{imported("GO-2026-0002", "github.com/google/cel-go", "v0.26.1")},
			unreached: "GO-2026-0002/github.com/google/cel-go", ok: true,
		},
		{
			name:        "stdlib finding accepted for this toolchain",
			findings:    []finding{sym("GO-2026-0003", stdlib, "v1.26.8", "v1.26.9"), imported("GO-2026-0003", stdlib, "v1.26.8")},
			accepted:    []acceptance{accept("GO-2026-0003", tc)},
			acceptedIDs: "GO-2026-0003/stdlib", ok: true,
		},
		{
			name:     "a line for another toolchain accepts nothing",
			findings: []finding{sym("GO-2026-0003", stdlib, "v1.26.8", "v1.26.9")},
			accepted: []acceptance{accept("GO-2026-0003", "go1.26.7")},
			failing:  "GO-2026-0003/stdlib",
		},
		{
			name:     "a stdlib line never accepts the same ID in a module",
			findings: []finding{sym("GO-2026-0004", stdlib, "v1.26.8", "v1.26.9"), sym("GO-2026-0004", "golang.org/x/net", "v0.50.0", "v0.60.0")},
			accepted: []acceptance{accept("GO-2026-0004", tc)},
			failing:  "GO-2026-0004/golang.org/x/net", acceptedIDs: "GO-2026-0004/stdlib",
		},
		{
			name:      "a line for this toolchain that matches nothing is stale",
			findings:  []finding{imported("GO-2026-0005", stdlib, "v1.26.8")},
			accepted:  []acceptance{accept("GO-2026-0005", tc)},
			unreached: "GO-2026-0005/stdlib", stale: "GO-2026-0005",
		},
		{
			name:     "a line for another toolchain is not stale",
			accepted: []acceptance{accept("GO-2026-0006", "go1.26.7")}, ok: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := decide(scan{Config: config{GoVersion: tc}, Findings: c.findings}, c.accepted)
			if got := ids(v.Failing); got != c.failing {
				t.Errorf("failing = %q, want %q", got, c.failing)
			}
			if got := ids(v.Accepted); got != c.acceptedIDs {
				t.Errorf("accepted = %q, want %q", got, c.acceptedIDs)
			}
			if got := ids(v.Unreached); got != c.unreached {
				t.Errorf("unreached = %q, want %q", got, c.unreached)
			}
			if got := lineIDs(v.Stale); got != c.stale {
				t.Errorf("stale = %q, want %q", got, c.stale)
			}
			if v.ok() != c.ok {
				t.Errorf("ok = %v, want %v", v.ok(), c.ok)
			}
		})
	}
}

// Breaks if: parseAccepted took a line without a reason, a malformed ID or
// toolchain, or the same ID twice.
func TestParseAccepted(t *testing.T) {
	good := "# comment\n\nGO-2026-6617 go1.26.8 fixed in go1.26.9; toolchain pinned\n"
	as, err := parseAccepted(strings.NewReader(good))
	if err != nil || len(as) != 1 || as[0].ID != "GO-2026-6617" || as[0].Toolchain != "go1.26.8" ||
		as[0].Reason != "fixed in go1.26.9; toolchain pinned" || as[0].Line != 3 {
		t.Fatalf("parseAccepted(good) = %+v, %v", as, err)
	}
	for _, bad := range []string{
		"GO-2026-6617 go1.26.8\n",
		"CVE-2026-1 go1.26.8 reason\n",
		"GO-2026-6617 1.26.8 reason\n",
		"GO-2026-6617 go1.26.8 a\nGO-2026-6617 go1.26.8 b\n",
	} {
		if _, err := parseAccepted(strings.NewReader(bad)); err == nil {
			t.Errorf("parseAccepted(%q) accepted it", bad)
		}
	}
}

// A trimmed govulncheck -format json stream: one reachable stdlib finding,
// the same ID at package level, and an imported-only module finding.
const stream = `{"config":{"protocol_version":"v1.0.0","scanner_name":"govulncheck","scanner_version":"v1.9.0","db":"file:///db","go_version":"go1.26.8","scan_level":"symbol","scan_mode":"source"}}
{"progress":{"message":"Scanning your code..."}}
{"osv":{"id":"GO-2026-6617","summary":"HTTP/2 server crash due to HPACK encoder race in net/http"}}
{"osv":{"id":"GO-2026-6094","summary":"cel-go"}}
{"finding":{"osv":"GO-2026-6094","fixed_version":"v0.30.0","trace":[{"module":"github.com/google/cel-go","version":"v0.26.1","package":"github.com/google/cel-go/cel"}]}}
{"finding":{"osv":"GO-2026-6617","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http"}]}}
{"finding":{"osv":"GO-2026-6617","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"RoundTrip","receiver":"*Transport"},{"module":"github.com/machine-api-operator/machine-api-operator","package":"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere","function":"RoundTrip","receiver":"restMetrics","position":{"filename":"pkg/provider/vsphere/metrics.go","line":115}}]}}
`

// Breaks if: run passed a reachable finding without an accepted line, hid
// an accepted one from the report, or passed a stream with no config.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	none := write("none.txt", "# nothing accepted\n")
	var out bytes.Buffer
	if err := run(strings.NewReader(stream), &out, none); !errors.Is(err, errFailed) {
		t.Fatalf("run without an accepted line = %v, want errFailed; output:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "REACHABLE GO-2026-6617 stdlib@v1.26.8 (fixed in v1.26.9)") ||
		!strings.Contains(out.String(), "vsphere.restMetrics.RoundTrip (pkg/provider/vsphere/metrics.go:115) → net/http.Transport.RoundTrip") {
		t.Errorf("report lacks the finding or its trace:\n%s", out.String())
	}

	out.Reset()
	ok := write("ok.txt", "GO-2026-6617 go1.26.8 fixed in go1.26.9, which this machine cannot fetch\n")
	if err := run(strings.NewReader(stream), &out, ok); err != nil {
		t.Fatalf("run with the line = %v; output:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "ACCEPTED  GO-2026-6617") || !strings.Contains(out.String(), "GO-2026-6094 github.com/google/cel-go") {
		t.Errorf("report lacks the accepted or the unreached finding:\n%s", out.String())
	}

	if err := run(strings.NewReader(""), &out, ok); err == nil || errors.Is(err, errFailed) {
		t.Errorf("run on an empty stream = %v, want a read error", err)
	}
	if err := run(strings.NewReader(strings.Replace(stream, `"symbol"`, `"module"`, 1)), &out, ok); err == nil || errors.Is(err, errFailed) {
		t.Errorf("run on a module-level scan = %v, want a read error", err)
	}
}
