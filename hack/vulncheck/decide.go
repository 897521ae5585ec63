package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

var errFailed = errors.New("reachable known vulnerabilities (or stale accepted lines): see above")

// The parts of govulncheck's JSON protocol (golang.org/x/vuln/internal/govulncheck) read here.
type message struct {
	Config  *config  `json:"config"`
	OSV     *osv     `json:"osv"`
	Finding *finding `json:"finding"`
}

type config struct {
	ScannerVersion string `json:"scanner_version"`
	DB             string `json:"db"`
	GoVersion      string `json:"go_version"`
	ScanLevel      string `json:"scan_level"`
}

type osv struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
}

type finding struct {
	OSV          string  `json:"osv"`
	FixedVersion string  `json:"fixed_version"`
	Trace        []frame `json:"trace"`
}

// frame: Trace[0] is the vulnerable symbol (or only its package or module,
// when the code does not reach it); the last frame is the entry in our code.
type frame struct {
	Module   string    `json:"module"`
	Version  string    `json:"version"`
	Package  string    `json:"package"`
	Function string    `json:"function"`
	Receiver string    `json:"receiver"`
	Position *position `json:"position"`
}

type position struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
}

type scan struct {
	Config   config
	Summary  map[string]string // OSV ID → summary
	Findings []finding
}

// readScan decodes the stream. A stream without its config message (an
// empty one, say) is an error rather than a clean result.
func readScan(r io.Reader) (scan, error) {
	s := scan{Summary: map[string]string{}}
	seenConfig := false
	dec := json.NewDecoder(r)
	for {
		var m message
		err := dec.Decode(&m)
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
		switch {
		case m.Config != nil:
			s.Config, seenConfig = *m.Config, true
		case m.OSV != nil:
			s.Summary[m.OSV.ID] = m.OSV.Summary
		case m.Finding != nil:
			if len(m.Finding.Trace) == 0 {
				return s, fmt.Errorf("finding %s has no trace", m.Finding.OSV)
			}
			s.Findings = append(s.Findings, *m.Finding)
		}
	}
	if !seenConfig {
		return s, errors.New("no config message: not a govulncheck -format json stream")
	}
	if s.Config.ScanLevel != "" && s.Config.ScanLevel != "symbol" {
		return s, fmt.Errorf("scan level %q: only a symbol scan tells what is reachable", s.Config.ScanLevel)
	}
	return s, nil
}

// acceptance is one line of the accepted file.
type acceptance struct {
	ID        string // GO-yyyy-nnnn
	Toolchain string // the go_version it holds for, e.g. go1.26.8
	Reason    string
	Line      int
}

var idRE = regexp.MustCompile(`^GO-\d{4}-\d{4,}$`)
var toolchainRE = regexp.MustCompile(`^go1\.\d+(\.\d+)?$`)

// parseAccepted reads "ID go1.x.y reason..." lines; # starts a comment.
func parseAccepted(r io.Reader) ([]acceptance, error) {
	var out []acceptance
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: want \"ID go1.x.y reason\", got %q", n, line)
		}
		if !idRE.MatchString(f[0]) {
			return nil, fmt.Errorf("line %d: %q is not a Go vulnerability ID (GO-yyyy-nnnn)", n, f[0])
		}
		if !toolchainRE.MatchString(f[1]) {
			return nil, fmt.Errorf("line %d: %q is not a toolchain version (go1.x.y)", n, f[1])
		}
		if seen[f[0]] {
			return nil, fmt.Errorf("line %d: %s accepted twice", n, f[0])
		}
		seen[f[0]] = true
		out = append(out, acceptance{ID: f[0], Toolchain: f[1], Reason: strings.Join(f[2:], " "), Line: n})
	}
	return out, sc.Err()
}

// vuln is one (OSV ID, module) pair of the scan.
type vuln struct {
	ID, Module, Version, Fixed string
	Example                    []frame // a trace into the vulnerable symbol; nil when not reached
	Accepted                   *acceptance
}

type verdict struct {
	Failing   []vuln       // reachable, not accepted
	Accepted  []vuln       // reachable standard library findings accepted for this toolchain
	Unreached []vuln       // imported or required only: reported, never failing
	Stale     []acceptance // lines for this toolchain that match no reachable finding
	Other     []acceptance // lines for another toolchain: they accept nothing here
}

func (v verdict) ok() bool { return len(v.Failing) == 0 && len(v.Stale) == 0 }

const stdlib = "stdlib"

// decide sorts the findings: only a standard library finding, on the exact
// toolchain an accepted line names, is accepted; any other reachable
// finding fails, as does a line for this toolchain that nothing matched.
func decide(s scan, accepted []acceptance) verdict {
	byID := map[string]*acceptance{}
	for i := range accepted {
		byID[accepted[i].ID] = &accepted[i]
	}
	type key struct{ id, module string }
	vulns := map[key]*vuln{}
	var order []key
	for _, f := range s.Findings {
		top := f.Trace[0]
		k := key{f.OSV, top.Module}
		v, ok := vulns[k]
		if !ok {
			v = &vuln{ID: f.OSV, Module: top.Module, Version: top.Version, Fixed: f.FixedVersion}
			vulns[k] = v
			order = append(order, k)
		}
		if top.Function != "" && v.Example == nil {
			v.Example = f.Trace
		}
	}
	slices.SortFunc(order, func(a, b key) int {
		return strings.Compare(a.id+" "+a.module, b.id+" "+b.module)
	})
	var out verdict
	used := map[string]bool{}
	for _, k := range order {
		v := vulns[k]
		if v.Example == nil {
			out.Unreached = append(out.Unreached, *v)
			continue
		}
		if a := byID[v.ID]; a != nil && v.Module == stdlib && a.Toolchain == s.Config.GoVersion {
			v.Accepted = a
			used[a.ID] = true
			out.Accepted = append(out.Accepted, *v)
			continue
		}
		out.Failing = append(out.Failing, *v)
	}
	for _, a := range accepted {
		switch {
		case a.Toolchain != s.Config.GoVersion:
			out.Other = append(out.Other, a)
		case !used[a.ID]:
			out.Stale = append(out.Stale, a)
		}
	}
	return out
}

// report writes the verdict for a reader; it returns the first write error.
func report(w io.Writer, s scan, v verdict) error {
	var err error
	printf := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	printf("govulncheck %s, %s, database %s\n", s.Config.ScannerVersion, s.Config.GoVersion, s.Config.DB)
	line := func(x vuln) string {
		fixed := x.Fixed
		if fixed == "" {
			fixed = "no fixed version"
		}
		return fmt.Sprintf("%s %s@%s (fixed in %s): %s", x.ID, x.Module, x.Version, fixed, s.Summary[x.ID])
	}
	for _, x := range v.Failing {
		printf("REACHABLE %s\n    %s\n", line(x), trace(x.Example))
	}
	for _, x := range v.Accepted {
		printf("ACCEPTED  %s\n    %s\n    accepted for %s (line %d): %s\n", line(x), trace(x.Example), x.Accepted.Toolchain, x.Accepted.Line, x.Accepted.Reason)
	}
	for _, a := range v.Stale {
		printf("STALE     accepted line %d: %s %s matches no reachable standard library finding of %s: remove it\n", a.Line, a.ID, a.Toolchain, s.Config.GoVersion)
	}
	if len(v.Other) > 0 {
		printf("%d accepted lines are for other toolchains than %s and accept nothing here\n", len(v.Other), s.Config.GoVersion)
	}
	if len(v.Unreached) > 0 {
		ids := make([]string, 0, len(v.Unreached))
		for _, x := range v.Unreached {
			ids = append(ids, x.ID+" "+x.Module)
		}
		printf("not reached from our code (imported or required only): %s\n", strings.Join(ids, ", "))
	}
	printf("%d reachable, %d of them accepted, %d stale accepted lines, %d not reached\n",
		len(v.Failing)+len(v.Accepted), len(v.Accepted), len(v.Stale), len(v.Unreached))
	return err
}

// trace renders "our.Caller (file:line) → ... → vulnerable.Symbol".
func trace(t []frame) string {
	parts := make([]string, 0, len(t))
	for i := len(t) - 1; i >= 0; i-- {
		f := t[i]
		name := f.Package
		if f.Receiver != "" {
			name += "." + strings.TrimPrefix(f.Receiver, "*")
		}
		if f.Function != "" {
			name += "." + f.Function
		}
		if f.Position != nil && i == len(t)-1 {
			name += fmt.Sprintf(" (%s:%d)", f.Position.Filename, f.Position.Line)
		}
		parts = append(parts, name)
	}
	return strings.Join(parts, " → ")
}
