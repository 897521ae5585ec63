package applytest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

func TestCountingTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	ct := NewCountingTransport()
	cfg := ct.Install(&rest.Config{Host: srv.URL})
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	requests := []struct{ method, path, verb string }{
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps/c", VerbGet},
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps", VerbList},
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps?watch=true", VerbWatch},
		{http.MethodGet, "/api/v1/watch/namespaces/ns/configmaps", VerbWatch},
		{http.MethodGet, "/apis/apps/v1/deployments", VerbList},
		{http.MethodGet, "/api/v1/namespaces/ns", VerbGet},
		{http.MethodGet, "/api/v1/namespaces/ns/status", VerbGet},
		{http.MethodGet, "/apis/apps/v1", VerbGet},
		{http.MethodPost, "/api/v1/namespaces/ns/configmaps", VerbPost},
		{http.MethodPut, "/api/v1/namespaces/ns/configmaps/c", http.MethodPut},
		{http.MethodPatch, "/api/v1/namespaces/ns/configmaps/c", http.MethodPatch},
		{http.MethodDelete, "/api/v1/namespaces/ns/configmaps/c", http.MethodDelete},
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, r := range requests {
				req, _ := http.NewRequest(r.method, srv.URL+r.path, nil)
				resp, err := hc.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}
		})
	}
	wg.Wait()

	snap := ct.Snapshot()
	for _, r := range requests {
		path := r.path
		if i := len(path) - len("?watch=true"); i > 0 && path[i:] == "?watch=true" {
			path = path[:i]
		}
		if snap[Request{Verb: r.verb, Path: path}] == 0 {
			t.Errorf("%s %s not counted as %s: %v", r.method, r.path, r.verb, snap)
		}
	}
	if got := ct.Writes(); got != 16 {
		t.Errorf("Writes = %d, want 16", got)
	}
	if got := ct.Reads(); got != 32 {
		t.Errorf("Reads = %d, want 32", got)
	}
	if got := ct.Count(VerbList); got != 8 {
		t.Errorf("LIST = %d, want 8", got)
	}
	if got := len(ct.WriteRequests()); got != 4 {
		t.Errorf("WriteRequests = %v", ct.WriteRequests())
	}
	ct.Reset()
	if ct.Total() != 0 || ct.String() != "" {
		t.Errorf("after Reset: %s", ct)
	}
}
