package metrics

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// writePair writes a self-signed serving pair for host into dir.
func writePair(t *testing.T, dir, host string) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, []net.IP{{127, 0, 0, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The key first: a reader that sees the new certificate with the old
	// key keeps what it serves.
	if err := os.WriteFile(filepath.Join(dir, KeyFile), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CertFile), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

func servedCN(t *testing.T, s *certSource) string {
	t.Helper()
	c, err := s.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	// certutil names self-signed certificates "<host>@<unix time>".
	cn, _, _ := strings.Cut(leaf.Subject.CommonName, "@")
	return cn
}

// TestCertSource: without files the self-signed certificate (CN localhost)
// is served; files that appear are served from the next handshake; a
// rotation is picked up after the recheck interval; a broken pair keeps the
// last good one.
func TestCertSource(t *testing.T) {
	old := certRecheck
	certRecheck = 50 * time.Millisecond
	defer func() { certRecheck = old }()

	dir := t.TempDir()
	s := &certSource{dir: dir}
	if cn := servedCN(t, s); cn != "localhost" {
		t.Fatalf("no files: served CN %q, want the self-signed localhost", cn)
	}
	writePair(t, dir, "machine-api-controllers.openshift-machine-api.svc")
	if cn := servedCN(t, s); cn != "machine-api-controllers.openshift-machine-api.svc" {
		t.Fatalf("files written: served CN %q", cn)
	}
	writePair(t, dir, "rotated.openshift-machine-api.svc")
	time.Sleep(2 * certRecheck)
	if cn := servedCN(t, s); cn != "rotated.openshift-machine-api.svc" {
		t.Fatalf("after rotation: served CN %q", cn)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * certRecheck)
	if cn := servedCN(t, s); cn != "rotated.openshift-machine-api.svc" {
		t.Fatalf("broken pair: served CN %q, want the last good one", cn)
	}
}

// TestSecureServerOptions: HTTPS with controller-runtime's authentication and
// authorization filter, HTTP/1.1 only; the certificate from the directory
// when one is given, else controller-runtime's self-signed one.
func TestSecureServerOptions(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		o := SecureServerOptions(":8443", dir)
		if !o.SecureServing || o.FilterProvider == nil || o.BindAddress != ":8443" {
			t.Errorf("dir %q: options %+v: want secure serving with the authn/authz filter", dir, o)
		}
		cfg := &tls.Config{}
		for _, f := range o.TLSOpts {
			f(cfg)
		}
		if len(cfg.NextProtos) != 1 || cfg.NextProtos[0] != "http/1.1" {
			t.Errorf("dir %q: NextProtos %v, want only http/1.1", dir, cfg.NextProtos)
		}
		if (cfg.GetCertificate != nil) != (dir != "") {
			t.Errorf("dir %q: GetCertificate set = %v", dir, cfg.GetCertificate != nil)
		}
		if _, err := os.Stat(o.CertDir); dir == "" && !os.IsNotExist(err) {
			t.Errorf("without a cert dir controller-runtime must find no certificate in %s (%v)", o.CertDir, err)
		}
	}
}

// TestAuthnErrorAsUnauthorized: the filter's 500 "Authentication failed"
// becomes 401; any other response, 500s included, passes unchanged.
func TestAuthnErrorAsUnauthorized(t *testing.T) {
	for _, tc := range []struct {
		name     string
		handler  http.HandlerFunc
		wantCode int
		wantBody string
	}{
		{"authentication error", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
		}, http.StatusUnauthorized, "Unauthorized\n"},
		{"authorization error", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "Authorization for user x failed", http.StatusInternalServerError)
		}, http.StatusInternalServerError, "Authorization for user x failed\n"},
		{"500 without body", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		}, http.StatusInternalServerError, ""},
		{"403", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "Authorization denied for user x", http.StatusForbidden)
		}, http.StatusForbidden, "Authorization denied for user x\n"},
		{"metrics", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("up 1\n"))
		}, http.StatusOK, "up 1\n"},
	} {
		rec := httptest.NewRecorder()
		unauthorizedOnAuthnError(tc.handler).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != tc.wantCode || rec.Body.String() != tc.wantBody {
			t.Errorf("%s: %d %q, want %d %q", tc.name, rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
		}
	}
}
