// Package applytest counts the requests a client sends, so tests can assert
// that a steady state sends zero writes.
package applytest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
)

// Verbs a request is counted under: GETs split into GET, LIST and WATCH; the
// others are the HTTP methods.
const (
	VerbGet   = "GET"
	VerbList  = "LIST"
	VerbWatch = "WATCH"
	VerbPost  = http.MethodPost
)

// IsWrite reports whether verb changes state (dry-run requests count as writes).
func IsWrite(verb string) bool {
	return !slices.Contains([]string{VerbGet, VerbList, VerbWatch, http.MethodHead, http.MethodOptions}, verb)
}

// Request is one counted kind of request.
type Request struct {
	Verb string
	// Path is the URL path, e.g. /apis/apps/v1/namespaces/ns/deployments/name.
	Path string
}

func (r Request) String() string { return r.Verb + " " + r.Path }

// CountingTransport counts the requests of every client built from a
// rest.Config it is installed on (Install). It is safe for concurrent use.
type CountingTransport struct {
	mu     sync.Mutex
	counts map[Request]int
}

// NewCountingTransport returns a CountingTransport with no requests counted.
func NewCountingTransport() *CountingTransport {
	return &CountingTransport{counts: map[Request]int{}}
}

// Install returns a copy of cfg whose transport counts requests in c.
func (c *CountingTransport) Install(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return promhttp.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			r := Request{Verb: verbOf(req), Path: req.URL.Path}
			c.mu.Lock()
			c.counts[r]++
			c.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// Writes returns the number of write requests counted.
func (c *CountingTransport) Writes() int { return c.sum(IsWrite) }

// Reads returns the number of GET, LIST and WATCH requests counted.
func (c *CountingTransport) Reads() int { return c.sum(func(v string) bool { return !IsWrite(v) }) }

// Count returns the number of requests counted with verb.
func (c *CountingTransport) Count(verb string) int {
	return c.sum(func(v string) bool { return v == verb })
}

// Total returns the number of requests counted.
func (c *CountingTransport) Total() int { return c.sum(func(string) bool { return true }) }

func (c *CountingTransport) sum(match func(verb string) bool) (n int) {
	for r, k := range c.Snapshot() {
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
	return maps.Clone(c.counts)
}

// WriteRequests lists the write requests counted, sorted, as "VERB path"
// with a " xN" suffix when repeated (for test failure messages).
func (c *CountingTransport) WriteRequests() []string {
	var out []string
	for r, k := range c.Snapshot() {
		switch {
		case !IsWrite(r.Verb):
		case k > 1:
			out = append(out, fmt.Sprintf("%s x%d", r, k))
		default:
			out = append(out, r.String())
		}
	}
	slices.Sort(out)
	return out
}

// String summarizes the counts by verb, e.g. "GET=5 PATCH=1".
func (c *CountingTransport) String() string {
	byVerb := map[string]int{}
	for r, k := range c.Snapshot() {
		byVerb[r.Verb] += k
	}
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(byVerb)) {
		parts = append(parts, fmt.Sprintf("%s=%d", v, byVerb[v]))
	}
	return strings.Join(parts, " ")
}

// Reset forgets every request counted so far.
func (c *CountingTransport) Reset() {
	c.mu.Lock()
	c.counts = map[Request]int{}
	c.mu.Unlock()
}

// requestInfo parses paths as the API server does.
var requestInfo = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// verbOf classifies a request: a GET is LIST, WATCH or GET as the API server
// sees it; other methods count as themselves.
func verbOf(req *http.Request) string {
	if req.Method != http.MethodGet {
		return req.Method
	}
	if info, err := requestInfo.NewRequestInfo(req); err == nil && (info.Verb == "list" || info.Verb == "watch") {
		return strings.ToUpper(info.Verb) // VerbList, VerbWatch
	}
	return VerbGet
}
