// Package applytest holds test helpers for code that talks to the API server:
// CountingTransport counts the requests a client sends, so tests can assert
// that a steady state sends zero writes.
package applytest

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Verbs a request is counted under. GET requests are split into GET (one
// object, or a non-resource path such as discovery), LIST and WATCH by their
// path and query; the others are the HTTP methods.
const (
	VerbGet    = "GET"
	VerbList   = "LIST"
	VerbWatch  = "WATCH"
	VerbPost   = "POST"
	VerbPut    = "PUT"
	VerbPatch  = "PATCH"
	VerbDelete = "DELETE"
)

// IsWrite reports whether verb changes state (POST, PUT, PATCH, DELETE, and
// any other non-read method). Dry-run requests count as writes.
func IsWrite(verb string) bool {
	switch verb {
	case VerbGet, VerbList, VerbWatch, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// Request is one counted kind of request.
type Request struct {
	Verb string
	// Path is the URL path, e.g. /apis/apps/v1/namespaces/ns/deployments/name.
	Path string
}

func (r Request) String() string { return r.Verb + " " + r.Path }

// CountingTransport counts the requests of every client built from a
// rest.Config it is installed on. It is safe for concurrent use.
//
//	ct := applytest.NewCountingTransport()
//	cfg := ct.Install(env.Config)    // or cfg.Wrap(ct.Wrap)
//	c, _ := client.New(cfg, client.Options{Scheme: env.Scheme})
//	... ct.Reset(); reconcile; if ct.Writes() != 0 { t.Errorf("writes: %v", ct.WriteRequests()) }
type CountingTransport struct {
	mu     sync.Mutex
	counts map[Request]int
}

// NewCountingTransport returns a CountingTransport with no requests counted.
func NewCountingTransport() *CountingTransport {
	return &CountingTransport{counts: map[Request]int{}}
}

// Install returns a copy of cfg whose transport counts requests in c (after
// any wrapper cfg already has).
func (c *CountingTransport) Install(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(c.Wrap)
	return cfg
}

// Wrap is a transport.WrapperFunc for rest.Config.Wrap.
func (c *CountingTransport) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &countingRoundTripper{counter: c, next: rt}
}

type countingRoundTripper struct {
	counter *CountingTransport
	next    http.RoundTripper
}

func (rt *countingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.counter.record(Request{Verb: verbOf(req), Path: req.URL.Path})
	return rt.next.RoundTrip(req)
}

func (c *CountingTransport) record(r Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[Request]int{}
	}
	c.counts[r]++
}

// Writes returns the number of write requests counted.
func (c *CountingTransport) Writes() int {
	return c.sum(IsWrite)
}

// Reads returns the number of GET, LIST and WATCH requests counted.
func (c *CountingTransport) Reads() int {
	return c.sum(func(v string) bool { return !IsWrite(v) })
}

// Count returns the number of requests counted with verb.
func (c *CountingTransport) Count(verb string) int {
	return c.sum(func(v string) bool { return v == verb })
}

// Total returns the number of requests counted.
func (c *CountingTransport) Total() int {
	return c.sum(func(string) bool { return true })
}

func (c *CountingTransport) sum(match func(verb string) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for r, k := range c.counts {
		if match(r.Verb) {
			n += k
		}
	}
	return n
}

// Snapshot returns a copy of the counts.
func (c *CountingTransport) Snapshot() map[Request]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[Request]int, len(c.counts))
	for r, k := range c.counts {
		out[r] = k
	}
	return out
}

// WriteRequests lists the write requests counted, sorted, as "VERB path"
// with a " xN" suffix when repeated (for test failure messages).
func (c *CountingTransport) WriteRequests() []string {
	var out []string
	for r, k := range c.Snapshot() {
		if !IsWrite(r.Verb) {
			continue
		}
		s := r.String()
		if k > 1 {
			s += fmt.Sprintf(" x%d", k)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// String summarizes the counts by verb, e.g. "GET=5 PATCH=1".
func (c *CountingTransport) String() string {
	byVerb := map[string]int{}
	for r, k := range c.Snapshot() {
		byVerb[r.Verb] += k
	}
	verbs := make([]string, 0, len(byVerb))
	for v := range byVerb {
		verbs = append(verbs, v)
	}
	sort.Strings(verbs)
	parts := make([]string, len(verbs))
	for i, v := range verbs {
		parts[i] = fmt.Sprintf("%s=%d", v, byVerb[v])
	}
	return strings.Join(parts, " ")
}

// Reset forgets every request counted so far.
func (c *CountingTransport) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[Request]int{}
}

// verbOf classifies a request. GETs of a collection path are LIST, GETs with
// watch=true (or of a legacy /watch/ path) are WATCH.
func verbOf(req *http.Request) string {
	if req.Method != http.MethodGet {
		return req.Method
	}
	q := req.URL.Query()
	if w := q.Get("watch"); w == "true" || w == "1" {
		return VerbWatch
	}
	if isLegacyWatchPath(req.URL.Path) {
		return VerbWatch
	}
	if isCollectionPath(req.URL.Path) {
		return VerbList
	}
	return VerbGet
}

// isLegacyWatchPath reports whether p is /api/v1/watch/... or
// /apis/<g>/<v>/watch/....
func isLegacyWatchPath(p string) bool {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		return segs[2] == "watch"
	case len(segs) >= 4 && segs[0] == "apis":
		return segs[3] == "watch"
	}
	return false
}

// isCollectionPath reports whether p is a resource collection:
// /api/v1/<res>, /api/v1/namespaces/<ns>/<res>, /apis/<g>/<v>/<res>,
// /apis/<g>/<v>/namespaces/<ns>/<res>.
func isCollectionPath(p string) bool {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		return false
	}
	if len(segs) > 0 && segs[0] == "watch" {
		return false
	}
	switch len(segs) {
	case 1:
		return true
	case 3:
		// namespaces/<ns>/<res>, but not namespaces/<ns>/{status,finalize}.
		return segs[0] == "namespaces" && segs[2] != "status" && segs[2] != "finalize"
	}
	return false
}
